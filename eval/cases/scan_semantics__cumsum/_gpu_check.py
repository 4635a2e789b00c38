"""Run on the GPU box: for each case, GPU sizes from case.toml [gpu], fixed must match float64, candidate must not."""
import sys, json, time, tomllib, importlib.util, traceback
from pathlib import Path
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m

def bad_frac(c, r, atol, rtol):
    c = c.double(); r = r.double()
    cn, rn = torch.isnan(c), torch.isnan(r)
    fin = torch.isfinite(c) & torch.isfinite(r)
    err = torch.where(fin, (c - r).abs(), torch.zeros_like(c))
    bad = (fin & (err > atol + rtol * r.abs())) | (cn ^ rn) | ((torch.isinf(c) | torch.isinf(r)) & ~(cn | rn) & (c != r))
    return bad.float().mean().item(), err.max().item()

def noncontig(t):
    if not t.is_floating_point() or t.dim() == 0: return t
    w = torch.empty(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype, device=t.device); v = w[..., ::2]; v.copy_(t); return v

root = Path(sys.argv[1]); names = sys.argv[2:]
out = []
for n in names:
    d = root / n
    row = {"case": n}
    try:
        meta = tomllib.loads((d / "case.toml").read_text())
        ref = load(d / "reference.py", f"ref_{n}")
        for k, v in meta.get("gpu", {}).items():
            setattr(ref, k, v)
        torch.manual_seed(0)
        model = ref.Model(*ref.get_init_inputs()).cuda().eval()
        torch.manual_seed(0)
        xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
        row["numel_in"] = sum(x.numel() for x in xs if isinstance(x, torch.Tensor))
        for tname, tf in (("seed0", lambda t: t), ("x100", lambda t: t * 100 if t.is_floating_point() else t), ("noncontig", noncontig)):
            ts = [tf(x) if isinstance(x, torch.Tensor) else x for x in xs]
            with torch.no_grad():
                native = model(*ts)
                import copy
                m64 = copy.deepcopy(model).double()
                r64 = m64(*[t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in ts])
            dt = native.dtype
            atol = rtol = (1e-3 if dt == torch.float32 else 1e-2) if dt.is_floating_point else 0.0
            atol = meta.get("atol", atol); rtol = meta.get("rtol", rtol)
            if dt.is_floating_point:
                nf, nerr = bad_frac(native, r64, atol, rtol)
                if nf > 0: atol = max(atol, 2 * nerr)
            for which in (("fixed", "candidate") if tname == "seed0" else ("fixed",)):
                mod = load(d / f"{which}.py", f"{which}_{n}")
                torch.manual_seed(0)
                mn = mod.ModelNew(*ref.get_init_inputs())
                own = mn.state_dict(); sd = {k: v for k, v in model.state_dict().items() if k in own and own[k].shape == v.shape}
                mn.load_state_dict(sd, strict=False); mn = mn.cuda().eval()
                t0 = time.time()
                with torch.no_grad():
                    o = mn(*[t.clone() if isinstance(t, torch.Tensor) else t for t in ts])
                torch.cuda.synchronize()
                if o.dtype != dt:
                    row[f"{which}_{tname}"] = f"dtype {o.dtype} vs {dt}"
                    continue
                frac, err = bad_frac(o, r64 if dt.is_floating_point else native, atol, rtol)
                row[f"{which}_{tname}"] = {"bad_frac": round(frac, 6), "max_err": err, "atol": atol, "sec": round(time.time() - t0, 2)}
    except Exception as e:
        row["error"] = traceback.format_exc()[-1500:]
    print(json.dumps(row), flush=True)
    out.append(row)
    torch.cuda.empty_cache()
