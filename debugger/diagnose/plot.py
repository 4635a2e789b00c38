"""The error map as a picture: which elements of the worst output are wrong, with block boundaries."""
from __future__ import annotations

from pathlib import Path

import torch


def plot_error_map(ref: torch.Tensor, cand: torch.Tensor, path: Path, *, title: str = "",
                   block_sizes=(), atol: float = 1e-4, rtol: float = 1e-4) -> Path:
    """Render |cand - ref| (log scale) and the wrong-element mask of one output to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from debugger.compare import wrong_mask

    r = ref.double()
    c = cand.double()
    if r.dim() == 0:
        r, c = r.reshape(1, 1), c.reshape(1, 1)
    elif r.dim() == 1:
        r, c = r.reshape(1, -1), c.reshape(1, -1)
    else:
        r, c = r.reshape(-1, r.shape[-1]), c.reshape(-1, c.shape[-1])
    wrong = wrong_mask(c, r, atol, rtol)
    err = (c - r).abs()
    err = torch.where(torch.isfinite(err), err, torch.full_like(err, float(err[torch.isfinite(err)].max())
                                                                if bool(torch.isfinite(err).any()) else 1.0))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), squeeze=False)
    aspect = "auto"
    im = axes[0][0].imshow(torch.log10(err + 1e-12).numpy(), aspect=aspect, cmap="viridis", interpolation="nearest")
    axes[0][0].set_title("log10 |candidate - reference|")
    fig.colorbar(im, ax=axes[0][0])
    axes[0][1].imshow(wrong.numpy(), aspect=aspect, cmap="Reds", interpolation="nearest", vmin=0, vmax=1)
    axes[0][1].set_title(f"wrong elements ({int(wrong.sum())} of {wrong.numel()})")
    cols = r.shape[1]
    for b in block_sizes:
        if 1 < b < cols:
            for ax in (axes[0][0], axes[0][1]):
                for x in range(b, cols, b):
                    ax.axvline(x - 0.5, color="white" if ax is axes[0][0] else "black", lw=0.6, ls="--")
    for ax in axes[0]:
        ax.set_xlabel("last dimension")
        ax.set_ylabel("rows (leading dims flattened)")
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def worst_output(ev) -> tuple[str, int] | None:
    """(check, output) with the largest fraction of wrong elements among captured failing checks."""
    best = None
    for c in ev.report.failed_checks:
        if c.name not in ev.artifacts:
            continue
        for o in c.outputs:
            if not o.passed and o.problem is None and (best is None or o.frac_wrong > best[0]):
                best = (o.frac_wrong, c.name, o.index)
    return (best[1], best[2]) if best else None
