"""Memory: guides and notes, the memory agent and its folding policies."""


def memory_lock(owner_type: str, member_id: str | None) -> str:
    """The resource a change of one owner's memory locks (its document, notes, guide and files:
    the fold, a proposal, an edit; db.transaction's locks)."""
    return f"memory:{owner_type}:{member_id or ''}"
