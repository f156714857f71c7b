"""BERT-flow's invertible network (Li et al., 2020), the simplified Glow the paper uses: blocks of actnorm, a
fixed random permutation and an additive coupling layer. It maps sentence embeddings x to a latent z that is
standard Gaussian under the fitted model; `searchengine train flow` fits it by maximum likelihood.

Saved as a sentence-transformers module folder (config.json + model.safetensors) of type `searchengine.encoding.flow.Flow`.
The class also keeps sentence-transformers' module contract (forward(features) replaces
features["sentence_embedding"], save(path), a one-argument load(path)), so
`SentenceTransformer(model_dir, trust_remote_code=True)` runs the same model when searchengine is installed;
sentence-transformers 6 asks for trust_remote_code for any module class outside its own package.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
from torch import Tensor, nn

from searchengine.errors import SearchEngineError

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class ActNorm(nn.Module):
    """Per-dimension affine map z = (x + loc) * exp(log_scale); fitting initialises it from data (Glow)."""

    def __init__(self, dimension: int) -> None:
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dimension))
        self.log_scale = nn.Parameter(torch.zeros(dimension))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return (x + self.loc) * torch.exp(self.log_scale), self.log_scale.sum().expand(x.shape[0])

    def inverse(self, z: Tensor) -> Tensor:
        return z * torch.exp(-self.log_scale) - self.loc


class AdditiveCoupling(nn.Module):
    """NICE's additive coupling: the second half moves by an MLP of the first half (log-determinant 0)."""

    def __init__(self, dimension: int, hidden: int) -> None:
        super().__init__()
        self.split = dimension // 2
        self.net = nn.Sequential(
            nn.Linear(self.split, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, dimension - self.split),
        )
        nn.init.zeros_(self.net[-1].weight)  # starts as the identity, as in Glow
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x: Tensor) -> Tensor:
        a, b = x[:, : self.split], x[:, self.split :]
        return torch.cat([a, b + self.net(a)], dim=1)

    def inverse(self, z: Tensor) -> Tensor:
        a, b = z[:, : self.split], z[:, self.split :]
        return torch.cat([a, b - self.net(a)], dim=1)


class FlowBlock(nn.Module):
    """actnorm -> fixed permutation -> additive coupling."""

    def __init__(self, dimension: int, hidden: int, permutation: Tensor) -> None:
        super().__init__()
        self.actnorm = ActNorm(dimension)
        self.register_buffer("permutation", permutation.clone().long())
        self.register_buffer("inverse_permutation", torch.argsort(permutation).long(), persistent=False)
        self.coupling = AdditiveCoupling(dimension, hidden)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        x, log_det = self.actnorm(x)
        return self.coupling(x[:, self.permutation]), log_det

    def inverse(self, z: Tensor) -> Tensor:
        return self.actnorm.inverse(self.coupling.inverse(z)[:, self.inverse_permutation])


class Flow(nn.Module):
    """x -> z, invertible; log p(x) = log N(z; 0, I) + log |det dz/dx|."""

    def __init__(self, dimension: int, blocks: int = 8, hidden: int = 256, seed: int = 0) -> None:
        super().__init__()
        if dimension < 2 or blocks < 1 or hidden < 1:
            raise SearchEngineError(
                f"a flow needs dimension >= 2, blocks >= 1 and hidden >= 1, not {dimension}, {blocks}, {hidden}"
            )
        self.dimension, self.blocks_count, self.hidden, self.seed = dimension, blocks, hidden, seed
        generator = torch.Generator().manual_seed(seed)
        self.blocks = nn.ModuleList(
            FlowBlock(dimension, hidden, torch.randperm(dimension, generator=generator)) for _ in range(blocks)
        )

    # --- the transform itself -------------------------------------------------------------------------------
    def forward_with_log_det(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(z, log |det dz/dx|) for each row of x."""
        log_det = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        for block in self.blocks:
            x, block_log_det = block(x)
            log_det = log_det + block_log_det
        return x, log_det

    def transform(self, x: Tensor) -> Tensor:
        """Embeddings to the Gaussian latent."""
        return self.forward_with_log_det(x)[0]

    def inverse(self, z: Tensor) -> Tensor:
        """The latent back to embeddings."""
        for block in reversed(self.blocks):
            z = block.inverse(z)
        return z

    def log_likelihood(self, x: Tensor) -> Tensor:
        """log p(x) in nats for each row, under the standard Gaussian prior on z."""
        z, log_det = self.forward_with_log_det(x)
        return -0.5 * (z.pow(2).sum(dim=1) + self.dimension * math.log(2 * math.pi)) + log_det

    # --- sentence-transformers' module contract --------------------------------------------------------------
    def forward(self, features: dict[str, Tensor]) -> dict[str, Tensor]:
        features["sentence_embedding"] = self.transform(features["sentence_embedding"])
        return features

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def get_config_dict(self) -> dict[str, int]:
        return {"dimension": self.dimension, "blocks": self.blocks_count, "hidden": self.hidden, "seed": self.seed}

    def save(self, output_path: str | Path, *args: object, safe_serialization: bool = True, **kwargs: object) -> None:  # noqa: ARG002
        """Write config.json and model.safetensors into the folder `output_path`."""
        from safetensors.torch import save_file

        folder = Path(output_path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CONFIG_FILE).write_text(json.dumps(self.get_config_dict(), indent=2) + "\n", encoding="utf-8")
        state = {name: tensor.detach().cpu().contiguous() for name, tensor in self.state_dict().items()}
        save_file(state, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})

    @classmethod
    def load(cls, input_path: str | Path) -> Flow:
        """Read a folder written by save() (sentence-transformers calls this with the module's folder)."""
        from safetensors.torch import load_file

        folder = Path(input_path)
        try:
            config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
            flow = cls(
                int(config["dimension"]), int(config["blocks"]), int(config["hidden"]), int(config.get("seed", 0))
            )
            state = load_file(str(folder / WEIGHTS_FILE))
        except SearchEngineError:
            raise
        except Exception as exc:  # noqa: BLE001 (missing files, bad JSON, missing keys, a truncated safetensors file)
            raise SearchEngineError(f"cannot load the flow in {folder}: {type(exc).__name__}: {exc}") from None
        missing, unexpected = sorted(set(flow.state_dict()) - set(state)), sorted(set(state) - set(flow.state_dict()))
        if missing or unexpected:
            raise SearchEngineError(
                f"the flow in {folder} does not match its config.json (missing {missing[:3]}, unexpected "
                f"{unexpected[:3]}); refit it with `searchengine train flow`"
            )
        try:
            flow.load_state_dict(state)
        except RuntimeError as exc:
            raise SearchEngineError(f"the flow weights in {folder} have the wrong shapes: {exc}") from None
        identity = torch.arange(flow.dimension)
        for block in flow.blocks:
            if not torch.equal(torch.sort(block.permutation).values, identity):
                raise SearchEngineError(f"the flow in {folder} holds a permutation that is not one; refit it")
            block.inverse_permutation = torch.argsort(block.permutation)
        return flow.eval()
