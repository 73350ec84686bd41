"""The validator's representation of a replica's log: the model's log tuple, with appends that cost
the records appended, not the log's length.

The model (model/actions.py) appends by ``log + records``, truncates by ``log[:offset]`` and reads
by index, slice, ``len`` and iteration; a tuple copies the whole log on every append, so a long
run's validation grew with the square of its length. ``SharedLog`` is a prefix of an append-only
list shared by every candidate state and every later state that extends it: the model's code runs
on it unchanged and sees the same values (equal to the tuple, element by element, and as a
sequence: ``==``, ``hash``, ``repr``). Entries already in the list below a view's length are never
changed, so a view never changes either: an append to the list's full length extends it in place,
an append the list already holds after the view (a sibling candidate took the same step) shares
it, and any other append copies the view first (a truncated log appending anew).
"""

from __future__ import annotations

from itertools import islice


class SharedLog:
    """The first ``n`` entries of the append-only list ``buf``, as an immutable sequence."""

    __slots__ = ("_buf", "_n")

    def __init__(self, buf: list, n: int) -> None:
        self._buf, self._n = buf, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if type(i) is slice:
            start, stop, step = i.indices(self._n)
            if step != 1:
                return tuple(self._buf[: self._n][i])
            if start == 0:
                return SharedLog(self._buf, max(stop, 0))  # a prefix (a truncation): shared
            return tuple(self._buf[start:stop])  # a piece (a fetch answer, the unflushed batches): copied
        n = self._n
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("log index out of range")
        return self._buf[i]

    def __iter__(self):
        return islice(self._buf, self._n)

    def __add__(self, other):
        k = len(other)
        if not k:
            return self
        buf, n = self._buf, self._n
        if len(buf) == n:  # nothing was appended after this view: extend the list
            buf.extend(other)
            return SharedLog(buf, n + k)
        if len(buf) >= n + k and buf[n : n + k] == list(other):  # a sibling appended the same entries
            return SharedLog(buf, n + k)
        copy = buf[:n]
        copy.extend(other)
        return SharedLog(copy, n + k)

    def __radd__(self, other):
        return SharedLog(list(other) + self._buf[: self._n], len(other) + self._n)

    def __eq__(self, other) -> bool:
        if isinstance(other, SharedLog):
            if self._n != other._n:
                return False
            return self._buf is other._buf or self._buf[: self._n] == other._buf[: other._n]
        if isinstance(other, tuple):
            return len(other) == self._n and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))  # equal to the tuple it stands for, so hashed as it is

    def __repr__(self) -> str:
        return repr(tuple(self))


def shared(log) -> SharedLog:
    """``log`` (a tuple, or already shared) as a SharedLog."""
    return log if type(log) is SharedLog else SharedLog(list(log), len(log))
