"""Error-map analysis: where a failing output is wrong, and how (one output of one check at a time).

Works on the captured tensors of a check (reference in float64, the candidate's two runs: the first
with NaN-poisoned allocations, the second with a sentinel), and turns them into symptom tags from
debugger/symptoms.py plus the numbers behind each tag, for the evidence a person reads.
"""
from __future__ import annotations

import torch

from debugger.compare import default_tolerance, wrong_mask
from debugger.evaluate import SENTINEL_POISON

BLOCK_GUESSES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def _as_2d(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0:
        return t.reshape(1, 1)
    if t.dim() == 1:
        return t.reshape(1, -1)
    return t.reshape(-1, t.shape[-1])


def never_written_mask(run1: torch.Tensor, run2: torch.Tensor | None) -> torch.Tensor:
    """Elements still holding the poison: NaN on the first run and the sentinel on the second."""
    if not run1.is_floating_point():
        return torch.zeros(run1.shape, dtype=torch.bool, device=run1.device)
    nan1 = torch.isnan(run1)
    if run2 is None or run2.shape != run1.shape:
        return nan1
    return nan1 & (run2.double() == SENTINEL_POISON)


def _suffix_start(flat_wrong: torch.Tensor) -> int | None:
    """If the wrong elements are exactly a suffix of the flat index range, where it starts."""
    idx = torch.nonzero(flat_wrong).flatten()
    if idx.numel() == 0:
        return None
    start = int(idx[0])
    n = flat_wrong.numel()
    if idx.numel() == n - start:
        return start
    return None


def _periodic(flat_wrong: torch.Tensor, periods) -> int | None:
    """A period p such that the wrong elements sit at the same offsets within every p-block."""
    n = flat_wrong.numel()
    idx = torch.nonzero(flat_wrong).flatten()
    if idx.numel() < 4:
        return None
    for p in sorted(set(int(x) for x in periods if 1 < int(x) < n // 2)):
        offs = torch.unique(idx % p)
        if offs.numel() >= p:  # every offset wrong: no structure at this period
            continue
        blocks = torch.unique(idx // p).numel()
        if blocks < max(2, 0.5 * (n // p)):
            continue
        full = n // p * p
        pattern = torch.zeros(p, dtype=torch.bool, device=flat_wrong.device)
        pattern[offs] = True
        tiled = pattern.repeat(n // p)
        hit = int((flat_wrong[:full] & tiled).sum())
        # Most marked positions wrong, and most wrong elements at marked positions: a period that
        # divides the true one marks positions that are right in every other block.
        if hit >= 0.9 * int(tiled.sum()) and hit >= 0.9 * int(flat_wrong[:full].sum()):
            return p
    return None


def _close(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float) -> bool:
    if a.shape != b.shape or a.numel() == 0:
        return False
    return bool((~wrong_mask(a, b, atol, rtol)).float().mean() > 0.98)


def _mostly_whole(frac: torch.Tensor) -> bool:
    """Nearly every line (row or column) with an error is wrong nearly throughout. Not every one: on
    thousands of rows, a wrong scale that happens to lie close to the right one leaves a partial row."""
    touched = frac[frac > 0]
    return bool(touched.numel()) and float((touched > 0.9).float().mean()) >= 0.95


def _prefix_len(flags: torch.Tensor) -> int | None:
    """p when exactly the flat elements [0, p) are set (p > 0), else None."""
    idx = torch.nonzero(flags).flatten()
    if idx.numel() == 0 or int(idx[-1]) != idx.numel() - 1:
        return None
    return int(idx.numel())


def coverage(unwritten: torch.Tensor) -> dict:
    """How the written elements of a poisoned output lie: how many, which rows (leading dims
    flattened, last dim the row), which leading slices (batch), whether they are one flat prefix
    (the first program's block) and the tags that say so."""
    n = unwritten.numel()
    written = ~unwritten
    n_written = int(written.sum())
    cov: dict = {"elements": n, "written": n_written, "never_written": n - n_written, "tags": []}
    tags = cov["tags"]
    if n_written == 0:
        tags.append("none_written")
    elif n - n_written > 0.5 * n:
        tags.append("mostly_unwritten")
    w2 = _as_2d(written)
    rows = w2.shape[0]
    row_any = w2.any(1)
    cov["rows"] = rows
    cov["rows_written"] = int(row_any.sum())
    cov["rows_fully_written"] = int(w2.all(1).sum())
    cov["written_row_ids"] = torch.nonzero(row_any).flatten()[:8].tolist()
    if rows > 1 and 0 < cov["rows_written"] < rows:
        tags.append("rows_unwritten")
    if written.dim() >= 3 and written.shape[0] > 1:
        lead = written.reshape(written.shape[0], -1).any(1)
        cov["leading_slices"] = int(written.shape[0])
        cov["leading_slices_written"] = int(lead.sum())
        if 0 < int(lead.sum()) < written.shape[0]:
            tags.append("slices_unwritten")
    prefix = _prefix_len(written.reshape(-1))
    if prefix is not None and prefix < n:
        cov["written_prefix"] = prefix
        tags.append("prefix_written")
    if n_written and n_written <= 8:
        cov["written_flat_ids"] = torch.nonzero(written.reshape(-1)).flatten().tolist()
    return cov


def describe_coverage(cov: dict, shape) -> str:
    """One line for a person: what of the output was written."""
    n, w = cov["elements"], cov["written"]
    if w == 0:
        return f"no element of the {list(shape)} output was written (all {n} still hold the allocation's poison)"
    text = f"{w} of {n} elements of the {list(shape)} output written, {n - w} never written"
    if cov.get("written_flat_ids"):
        text += f" (written: flat {cov['written_flat_ids']})"
    elif cov.get("written_prefix"):
        text += f" (written: exactly the first {cov['written_prefix']} flat elements)"
    if cov.get("rows", 1) > 1 and cov["rows_written"] < cov["rows"]:
        text += f"; rows written: {cov['rows_written']} of {cov['rows']} (rows {cov['written_row_ids']})"
    if cov.get("leading_slices") and cov["leading_slices_written"] < cov["leading_slices"]:
        text += f"; leading slices written: {cov['leading_slices_written']} of {cov['leading_slices']}"
    return text


def analyse_output(ref: torch.Tensor, run1: torch.Tensor, run2: torch.Tensor | None, *, atol: float | None = None,
                   rtol: float | None = None, block_sizes=(), device: str = "cpu") -> dict:
    """Facts and symptom tags for one failing output."""
    facts: dict = {"symptoms": [], "shape": list(ref.shape)}
    tags = facts["symptoms"]
    if not isinstance(run1, torch.Tensor) or run1.shape != ref.shape:
        facts["structure"] = "shape mismatch"
        return facts
    da, dr = default_tolerance(run1.dtype, device)
    atol = da if atol is None else atol
    rtol = dr if rtol is None else rtol
    if isinstance(run2, torch.Tensor):
        run2 = run2.to(ref.device)
    run1 = run1.to(ref.device)
    r = ref.double()
    c = run1.double()
    wrong = wrong_mask(c, r, atol, rtol)
    unwritten = never_written_mask(run1, run2)
    n = wrong.numel()
    n_wrong = int(wrong.sum())
    facts.update(n_wrong=n_wrong, frac_wrong=n_wrong / max(1, n), never_written=int(unwritten.sum()))
    if n_wrong == 0:
        return facts
    if facts["never_written"]:
        tags.append("never_written")
        cov = coverage(unwritten)
        facts["coverage"] = cov
        tags.extend(cov.pop("tags"))
    flat = wrong.reshape(-1)
    idx = torch.nonzero(flat).flatten()
    facts["first_wrong_flat"] = int(idx[0])
    facts["last_wrong_flat"] = int(idx[-1])
    cand_nan = torch.isnan(c) & ~torch.isnan(r) & ~unwritten
    cand_inf = torch.isinf(c) & ~torch.isinf(r)
    if int(cand_nan.sum()):
        tags.append("nan_in_output")
        facts["nan_count"] = int(cand_nan.sum())
    if int(cand_inf.sum()):
        tags.append("inf_in_output")

    frac = n_wrong / n
    w2 = _as_2d(wrong)
    rows, cols = w2.shape
    row_frac = w2.float().mean(1)
    col_frac = w2.float().mean(0)
    wrong_rows = int((row_frac > 0).sum())
    wrong_cols = int((col_frac > 0).sum())
    facts.update(rows=rows, cols=cols, wrong_rows=wrong_rows, wrong_cols=wrong_cols)
    suffix = _suffix_start(flat)
    col_idx = torch.nonzero(col_frac > 0).flatten()
    tail_cols = None
    if col_idx.numel() and int(col_idx[0]) > 0 and col_idx.numel() == cols - int(col_idx[0]):
        tail_cols = int(col_idx[0])
    if frac > 0.9:
        tags.append("all_wrong")
    elif suffix is not None and suffix > 0:
        tags.append("tail_block_wrong")
        facts["wrong_from_flat_index"] = suffix
    elif tail_cols is not None and wrong_rows >= max(1, rows // 2):
        tags.append("tail_block_wrong")
        facts["wrong_from_column"] = tail_cols
    if rows > 1 and 0 < wrong_rows < rows and _mostly_whole(row_frac):
        tags.append("whole_rows_wrong")
        facts["wrong_row_ids"] = torch.nonzero(row_frac > 0).flatten()[:16].tolist()
    if cols > 1 and 0 < wrong_cols < cols and _mostly_whole(col_frac) and rows > 1:
        tags.append("whole_cols_wrong")
        facts["wrong_col_ids"] = torch.nonzero(col_frac > 0).flatten()[:16].tolist()
    if "all_wrong" not in tags and "tail_block_wrong" not in tags:
        period = _periodic(flat, list(BLOCK_GUESSES) + list(block_sizes) + [cols])
        if period:
            tags.append("periodic_errors")
            facts["period"] = period
    if frac < 0.01 and not any(t in tags for t in ("tail_block_wrong", "whole_rows_wrong", "whole_cols_wrong")):
        tags.append("sparse_wrong")
    if "all_wrong" not in tags and w2.dim() == 2 and rows > 1 and cols > 1 and not tags[-1:] == ["sparse_wrong"]:
        rr = torch.nonzero(row_frac > 0).flatten()
        cc = torch.nonzero(col_frac > 0).flatten()
        box = (int(rr[-1]) - int(rr[0]) + 1) * (int(cc[-1]) - int(cc[0]) + 1)
        if box < 0.5 * n and n_wrong > 0.9 * box:
            tags.append("one_tile_wrong")
            facts["tile"] = [int(rr[0]), int(rr[-1]), int(cc[0]), int(cc[-1])]

    _magnitude(facts, tags, c, r, wrong & ~unwritten, atol, rtol)
    return facts


def _magnitude(facts: dict, tags: list, c: torch.Tensor, r: torch.Tensor, wrong: torch.Tensor,
               atol: float, rtol: float) -> None:
    """How the values are wrong: factor, sign, offset, transpose, shift, precision noise."""
    finite = wrong & torch.isfinite(c) & torch.isfinite(r)
    if int(finite.sum()) < 1:
        return
    cw, rw = c[finite], r[finite]
    rel = ((cw - rw).abs() / rw.abs().clamp_min(atol)).median().item()
    facts["median_rel_err_wrong"] = rel
    nz = rw.abs() > 1e-12
    if int(nz.sum()) >= 2:
        ratio = cw[nz] / rw[nz]
        m = ratio.median().item()
        spread = (ratio - m).abs().median().item()
        if spread < 1e-3 * max(1.0, abs(m)) and abs(m - 1) > 1e-3:
            if abs(m + 1) < 1e-3:
                tags.append("sign_flip")
            else:
                tags.append("constant_factor")
                facts["factor"] = m
    diff = cw - rw
    if diff.numel() >= 2:
        d = diff.median().item()
        if (diff - d).abs().median().item() < 1e-3 * max(1e-6, abs(d)) and abs(d) > atol:
            tags.append("offset_error")
            facts["offset"] = d
    if c.dim() >= 2 and c.shape[-1] == c.shape[-2] and _close(c.transpose(-1, -2), r, atol, rtol):
        tags.append("transposed")
    elif c.dim() >= 2 and c.numel() == r.numel() and c.shape[-1] != c.shape[-2]:
        swapped = c.reshape(*c.shape[:-2], c.shape[-1], c.shape[-2]).transpose(-1, -2)
        if _close(swapped, r, atol, rtol):
            tags.append("transposed")
    if c.dim() >= 1 and c.shape[-1] > 2:
        if _close(c[..., 1:], r[..., :-1], atol, rtol) or _close(c[..., :-1], r[..., 1:], atol, rtol):
            tags.append("shifted_by_one")
    if rel < 0.05 and "constant_factor" not in tags and "offset_error" not in tags:
        tags.append("precision_noise")
    elif rel > 0.1:
        tags.append("large_error")


DEPENDENCE_BY_CHECK = {
    "x100": "fails_large_magnitude", "x3": "fails_large_magnitude",
    "x0.01": "fails_small_magnitude",
    "negated": "fails_negative_inputs", "all_negative": "fails_negative_inputs",
    "noncontiguous": "fails_noncontiguous", "transposed": "fails_noncontiguous",
    "params_redrawn": "fails_param_redraw",
}


def dependence(report) -> list[str]:
    """Tags for when the candidate fails: only for some distributions, layouts, parameters, shapes."""
    tags: list[str] = []
    failed = {c.name for c in report.failed_checks}
    seeds_fail = any(n.startswith("seed") for n in failed)
    if not seeds_fail:
        for name in failed:
            tag = DEPENDENCE_BY_CHECK.get(name)
            if tag is None and name.startswith("hidden_shape"):
                tag = "fails_other_shapes"
            if tag and tag not in tags:
                tags.append(tag)
    for c in report.checks:
        if c.inputs_mutated and "inputs_mutated" not in tags:
            tags.append("inputs_mutated")
    return tags
