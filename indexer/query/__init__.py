"""What a search asks of the document store, compiled: metadata filters as typed, parameterised SQL (or numpy over
numeric columns held per snapshot), and a user's text as an FTS5 keyword match expression."""
