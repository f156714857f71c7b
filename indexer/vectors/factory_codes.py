"""What a FAISS factory string stores: the vectors themselves, or codes that only approximate them, and whether
those codes are product quantization. Read from the string alone, without building the index (the command line's
help imports this without NumPy or FAISS), and decided once here for what rests on it: whether segments keep their
originals (indexer/vectors/originals.py), how deep a query rescores them (indexer/vectors/rescore_depth.py), and
whether `info` advises a retrain (indexer/vectors/template.py).

A pre-transform is not a compression. OPQ's rotation ("OPQ16,Flat", "OPQ16,HNSW32", "OPQ16,IVF256,Flat") is an
orthogonal matrix: the vectors stored after it give back the vectors added to within float rounding (1e-12 squared
error, tests/indexer/vectors/test_factory_codes.py), so only the components after it decide. A pre-transform with
an output dimension ("OPQ16_64", "PCA64", "PCAR64", "RR64") projects onto that many dimensions, which loses what the
others held wherever the vectors have more; the string does not say the vectors' dimension, so such a type counts
as approximate (its originals cost disk where nothing was dropped, never exactness where something was).
"""

from __future__ import annotations

import re

_ROTATION = re.compile(r"OPQ\d+")
"""OPQ's learned rotation without an output dimension (OPQM keeps d dimensions)."""
_PROJECTION = re.compile(r"OPQ\d+_\d+|PCAW?R?\d+|RR\d+")
"""Pre-transforms onto a given number of dimensions, fewer than the vectors' where that number is smaller."""
_COMPRESSED = re.compile(r"(?<![A-Za-z])(?:PQ\d|SQ|LSH|ITQ|RQ|LSQ|PRQ|PLSQ|RaBitQ)")
"""Components whose codes approximate the vectors: product ("PQ16", "PQ96x4fs", "HNSW32_PQ16"), scalar, binary,
additive and RaBitQ quantizers."""
_PRODUCT_QUANTIZED = re.compile(r"(?<![A-Za-z])PQ\d")
"""Product-quantization components: "PQ16", "PQ96x4fs", "PQ48np", HNSW's "_PQ16"."""


def _components(factory: str) -> list[str]:
    """The components of `factory` that say what is stored: all but its OPQ rotations."""
    return [part for part in factory.split(",") if not _ROTATION.fullmatch(part.strip())]


def stores_approximate_vectors(factory: str) -> bool:
    """Whether segments of FAISS type `factory` hold codes that only approximate the vectors added (a quantizer, or
    a projection that may drop dimensions), rather than the vectors themselves or an exact rotation of them."""
    parts = _components(factory)
    return any(_PROJECTION.fullmatch(part.strip()) or _COMPRESSED.search(part) for part in parts)


def is_product_quantized(factory: str) -> bool:
    """Whether the codes of FAISS type `factory` are product quantization (after an OPQ rotation or not): the types
    whose rescoring depth and retrain rule were measured (indexer/vectors/rescore_depth.py, template.py)."""
    return any(_PRODUCT_QUANTIZED.search(part) for part in _components(factory))
