"""The commit protocol: the index directory (manifest, generations, writer lock, clean-up of what no commit
names), the manifest's records, durable files (checksums, fsync, claims), in-place writes (live_write), whole
rewrites (rewrite), segment merges (merge_policy), how a reader learns of a newer commit, the crash points tests
end a write at, adapted models kept in the index, and `verify`."""
