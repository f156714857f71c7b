"""Files benchmarks: indexing folders of HTML, PDF and Markdown, their extractors, questions and sync."""
