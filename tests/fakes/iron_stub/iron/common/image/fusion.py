"""Stub of iron/common/image/fusion.py @ 05a1d408: ArgumentSizes.

The fused runtime sequence's byte arenas in argument order: `input`,
`output`, `scratch`, then `feedback` only when the image declares one
(None otherwise); `arguments()` gives name -> bytes in that order, so an
arena's kernel argument is its position. SHIM_ADDRESS_ALIGNMENT: every
buffer starts on a 4-byte word.
"""

from typing import NamedTuple

SHIM_ADDRESS_ALIGNMENT = 4


class ArgumentSizes(NamedTuple):
    input: int
    output: int
    scratch: int
    feedback: int | None = None

    def arguments(self) -> dict[str, int]:
        sizes = self._asdict()
        if self.feedback is None:
            del sizes["feedback"]
        return sizes
