"""The index API: build, open, add to, search and delete from an index directory (`SearchEngine`), with the
corpus readers, metadata filters and the write and query paths it is made of."""
