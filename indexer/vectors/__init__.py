"""The vector files of an index: FAISS indexes wrapped as `VectorIndex` (ids are the store's ids), immutable
segments searched together as one (`SegmentSet`), the parts a build splits its vectors into (`--shards`, each
written as a segment), segments written by other processes for a build, how FAISS's exact search takes a batch,
and the fitted whitening transform saved beside them."""
