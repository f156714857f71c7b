"""Read the vectors already stored in an index: clustering and paraphrase mining. Nothing is re-encoded."""
