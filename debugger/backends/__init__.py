"""Backends propose edits to the kernel: `kb` (recipes and learned templates, no model) and `openai`
(any OpenAI-compatible endpoint). Both return Proposals; the repair graph applies and verifies them.
"""
from debugger.backends.base import Backend, BackendError, Proposal

__all__ = ["Backend", "BackendError", "Proposal"]
