"""Post-processing modules of a model, run after pooling and before Normalize, in modules.json order.

Two kinds exist, each in its own module folder so the index and the queries apply the same transform:

* sentence-transformers' own Dense with the Identity activation: the linear transforms (whitening-k, SN, NATSV),
  y = x W^T + b, folder with config.json and model.safetensors holding `linear.weight` (out, in) and
  `linear.bias` (out,), exactly as sentence-transformers writes and reads it;
* `searchengine.encoding.flow.Flow`: BERT-flow's invertible network.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from searchengine.encoding.model_source import DENSE_MODULE_TYPE, ModelSource
from searchengine.errors import SearchEngineError

IDENTITY_ACTIVATION = "torch.nn.modules.linear.Identity"
_IDENTITY_NAMES = {IDENTITY_ACTIVATION, "torch.nn.Identity", "torch.nn.modules.Identity"}
_WEIGHTS = "model.safetensors"


class LinearTransform(nn.Module):
    """A sentence-transformers Dense module with the Identity activation: y = x W^T + b."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.register_buffer("weight", weight.float().contiguous())
        self.register_buffer("bias", None if bias is None else bias.float().contiguous())

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def transform(self, x: Tensor) -> Tensor:
        return nn.functional.linear(x, self.weight, self.bias)

    @classmethod
    def load(cls, folder: Path) -> LinearTransform:
        from safetensors.torch import load_file

        config_path = folder / "config.json"
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SearchEngineError(f"cannot read the Dense module's {config_path}: {exc}") from None
        activation = config.get("activation_function", "torch.nn.modules.activation.Tanh")
        if activation not in _IDENTITY_NAMES:
            raise SearchEngineError(
                f"the Dense module in {folder} uses activation {activation!r}; searchengine runs Dense modules "
                f"with the Identity activation only ({IDENTITY_ACTIVATION})"
            )
        if config.get("use_residual") or config.get("module_input_name", "sentence_embedding") != "sentence_embedding":
            raise SearchEngineError(
                f"the Dense module in {folder} uses options searchengine does not run (use_residual or another "
                "module_input_name); only a plain linear map of the sentence embedding is supported"
            )
        try:
            tensors = load_file(str(folder / _WEIGHTS))
        except Exception as exc:  # noqa: BLE001 (missing or truncated file: safetensors raises its own types)
            raise SearchEngineError(f"cannot load the Dense weights {folder / _WEIGHTS}: {exc}") from None
        weight, bias = tensors.get("linear.weight"), tensors.get("linear.bias")
        shape = (config.get("out_features"), config.get("in_features"))
        if weight is None or tuple(weight.shape) != shape:
            raise SearchEngineError(
                f"{folder / _WEIGHTS} has no linear.weight of shape {shape} (out_features, in_features)"
            )
        if config.get("bias", True) and (bias is None or tuple(bias.shape) != (shape[0],)):
            raise SearchEngineError(f"{folder / _WEIGHTS} has no linear.bias of shape ({shape[0]},)")
        return cls(weight, bias if config.get("bias", True) else None)


def write_dense_module(folder: Path, weight: np.ndarray, bias: np.ndarray) -> None:
    """Write y = x weight^T + bias as sentence-transformers' Dense (Identity activation) into `folder`."""
    from safetensors.torch import save_file

    weight = np.ascontiguousarray(weight, dtype=np.float32)
    bias = np.ascontiguousarray(bias, dtype=np.float32)
    out_features, in_features = weight.shape
    if bias.shape != (out_features,):
        raise SearchEngineError(
            f"bias shape {bias.shape} does not match weight shape {weight.shape}; give one bias per weight row, "
            f"shape ({out_features},)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "in_features": int(in_features),
        "out_features": int(out_features),
        "bias": True,
        "activation_function": IDENTITY_ACTIVATION,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
    tensors = {"linear.weight": torch.from_numpy(weight), "linear.bias": torch.from_numpy(bias)}
    save_file(tensors, str(folder / _WEIGHTS), metadata={"format": "pt"})


def load_transforms(source: ModelSource, input_dimension: int) -> list[nn.Module]:
    """The model's transform modules in order, each checked to take the previous one's output size."""
    from searchengine.encoding.flow import Flow

    modules: list[nn.Module] = []
    dimension = input_dimension
    for module_type, folder in source.transforms:
        module = LinearTransform.load(folder) if module_type == DENSE_MODULE_TYPE else Flow.load(folder)
        expected = module.in_features if isinstance(module, LinearTransform) else module.dimension
        if expected != dimension:
            raise SearchEngineError(
                f"the module in {folder} takes {expected}-dimensional vectors but receives {dimension}; "
                "it was fitted for another model"
            )
        dimension = output_dimension(module)
        modules.append(module.eval())
    return modules


def output_dimension(module: nn.Module) -> int:
    return module.out_features if isinstance(module, LinearTransform) else int(module.dimension)


def apply_transforms(modules: list[nn.Module], vectors: Tensor) -> Tensor:
    """Run `vectors` (n, d) through the modules in order, in float32."""
    if modules:
        vectors = vectors.float()
    for module in modules:
        vectors = module.transform(vectors)
    return vectors
