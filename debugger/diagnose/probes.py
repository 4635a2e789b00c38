"""Diagnostic probes (placeholder until the instrumentation lands): no probes run."""


def run_probes(case, report, timeout: float = 120.0) -> dict:
    return {}
