"""Type stubs for bcolzx._ext.contexts (the codec classes' base: a lock per object)."""

class _Locked:
    def _after_fork(self) -> None: ...
