"""An order-maintenance list: items in a sequence, each with an integer label that
compares as the items' places do, so "does a come before b" is one comparison of ints.

Fusion keeps its kernels in a topological order this way (``fusion.Partition``): a merge
moves the few kernels its search found to one side of the merged kernel, and inserting
them there must not renumber the kernels after it, or a long program would be renumbered
once per merge.

Labels are spread over ``[0, 2**bits)``. An item moved between two neighbours whose labels
differ by two or more takes the midpoint. Otherwise the labels of an aligned block of
``2**i`` labels around the place, for the smallest ``i`` whose block is sparse enough
(holds at most ``(2/T)**i`` items, with T = 3/2), are spread evenly again: the list
labelling of Bender, Cole, Demaine, Farach-Colton and Zito ("Two simplified algorithms
for maintaining order in a list", ESA 2002), O(log n) relabellings per insertion,
amortised. The number of items never grows past what the list began with (items are
moved or removed, never added), so the label space chosen at the start always suffices.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

_HEAD, _TAIL = object(), object()  # sentinels at both ends, outside the label space


class ListOrder:
    """The items of ``items``, in that order, each with a label (``labels[item]``, a
    plain dict that searches read directly; it also holds the two end sentinels) that
    increases along the list.

    >>> order = ListOrder("abcd")
    >>> order.move_after(["a"], "c")
    >>> sorted("abcd", key=order.labels.get)
    ['b', 'c', 'a', 'd']
    """

    def __init__(self, items: Iterable[Hashable]):
        items = list(items)
        # (4/3)**bits must exceed the item count: the whole label space is then sparse.
        self.bits = 3 * (len(items) + 1).bit_length() + 2
        self.labels: dict = {_HEAD: -1, _TAIL: 1 << self.bits}
        self.next: dict = {}
        self.previous: dict = {}
        chain = [_HEAD, *items, _TAIL]
        for before, after in zip(chain, chain[1:], strict=False):
            self.next[before], self.previous[after] = after, before
        step = (1 << self.bits) // (len(items) + 1)
        for place, item in enumerate(items, start=1):
            self.labels[item] = place * step

    def remove(self, item: Hashable) -> None:
        """``item`` leaves the list; the others keep their labels."""
        before, after = self.previous.pop(item), self.next.pop(item)
        self.next[before], self.previous[after] = after, before
        del self.labels[item]

    def take_place(self, item: Hashable, of: Hashable) -> None:
        """``item`` leaves its place and takes that of ``of``, which leaves the list."""
        self.remove(item)
        before, after = self.previous.pop(of), self.next.pop(of)
        self.next[before], self.previous[after] = item, item
        self.previous[item], self.next[item] = before, after
        self.labels[item] = self.labels.pop(of)

    def move_after(self, items: list, anchor: Hashable) -> None:
        """Move ``items`` (not ``anchor``) right after ``anchor``, in the order given."""
        for item in items:
            self.remove(item)
        for item in items:
            self._insert_after(item, anchor)
            anchor = item

    def move_before(self, items: list, anchor: Hashable) -> None:
        """Move ``items`` (not ``anchor``) right before ``anchor``, in the order given."""
        for item in items:
            self.remove(item)
        before = self.previous[anchor]
        for item in items:
            self._insert_after(item, before)
            before = item

    def _insert_after(self, item: Hashable, before: Hashable) -> None:
        after = self.next[before]
        self.next[before], self.previous[item] = item, before
        self.next[item], self.previous[after] = after, item
        low, high = self.labels[before], self.labels[after]
        if high - low >= 2:
            self.labels[item] = (low + high) // 2
        else:
            self._relabel_around(item, high if before is _HEAD else low)

    def _relabel_around(self, item: Hashable, label: int) -> None:
        """Spread evenly the labels of the smallest sparse enough aligned block around
        ``label``, with ``item`` (linked in, not yet labelled) among them."""
        first = last = item
        count = 1
        for i in range(1, self.bits + 1):
            start = label >> i << i
            end = start + (1 << i)
            while start <= self.labels[self.previous[first]] < end:
                first = self.previous[first]
                count += 1
            while start <= self.labels[self.next[last]] < end:
                last = self.next[last]
                count += 1
            if count * 3**i <= 4**i:  # at most (2/T)**i items in 2**i labels
                break
        node = first
        for place in range(count):
            self.labels[node] = start + (place << i) // count
            node = self.next[node]
