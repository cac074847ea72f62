"""Prompt-cache anchoring (AN-2..AN-9): keep the front of the prompt byte-stable.

Provider caches match on a prefix, so layer output that changes often must not sit in front of
the history. Each layer renders into one of two bands: **anchor** (before history) or **live**
(after it). Within an **epoch** — a run of assemblies of one lineage — an anchored layer's
first render is *pinned* and re-sent as the very same items on every later assembly. When the
layer's fresh output differs, the change is published instead in one developer message after
the live band::

    <context_updates epoch="t:thread-1#0">
    ...
    <update layer="plan" action="replace">new content</update>
    </context_updates>

Actions: `replace` (the pin changed), `retract` (the layer produced nothing) and `add` (a layer
first seen mid-epoch). A lineage is the thread for depth-0 executions and the execution itself
for children, so children never share pins (AN-3).

A new epoch (a *re-anchor*, which re-pins everything and drops the updates) starts for one of
six reasons (AN-4): `cold-start`, `instructions-changed`, `cache-miss` (judged from round 0 of
the previous call, applied now), `delta-pressure` (updates outgrew `delta_budget_fraction` of
the anchor band), `delta-overflow` (updates do not fit the window, or a change cannot be put
into words) and `max-age`. A provider that reports no cache figures (`cached_tokens is None`)
or misses persistently becomes *cache-blind* and stops triggering `cache-miss` (AN-5). `auto`
layers change band only when an epoch opens, by churn (AN-6); a layer whose recall returned
state always renders live (AN-7). With `enabled=False` every layer renders before history and
there is no epoch (AN-9).
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, NamedTuple, TypeAlias

from noetic.items import Item, MessageItem, developer_message
from noetic.layers.cache_config import ContextCacheConfig
from noetic.tokens import estimate_item_tokens, estimate_items
from noetic.usage import EpochUsage, ReanchorReason, RoundUsage

__all__ = [
    "AnchorStore",
    "BandedView",
    "ContextCacheConfig",
    "EpochFigures",
    "LayerOutput",
    "ServeInfo",
    "band_outputs",
    "lineage_key",
]

Band: TypeAlias = Literal["anchor", "live"]
RenderDelta: TypeAlias = Callable[[str, tuple[Item, ...], tuple[Item, ...]], Awaitable[str | None]]

#: Consecutive judged misses after which a lineage stops trusting the provider's cache figures.
MAX_CONSECUTIVE_MISSES = 3
#: Lineages remembered per harness; the least recently used is forgotten first.
MAX_LINEAGES = 256


def lineage_key(depth: int, thread_id: str, execution_id: str) -> str:
    """Whose pins an assembly uses: the thread at depth 0, else the execution (AN-3)."""
    return f"t:{thread_id}" if depth == 0 else f"x:{execution_id}"


def content_hash(items: Sequence[Item]) -> str:
    """A hash of what the model reads in `items` (message ids and statuses left out)."""
    shapes = [
        i.model_dump(mode="json", exclude={"id", "status"})
        if isinstance(i, MessageItem)
        else i.model_dump(mode="json")
        for i in items
    ]
    data = json.dumps(shapes, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(data.encode(), digest_size=16).hexdigest()


def _text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


# --- per-harness state ---------------------------------------------------------------------


@dataclass(slots=True)
class Pin:
    """An anchored layer's pinned render: re-sent unchanged for the rest of the epoch (also
    the last live render of a layer, to judge its churn).

    `text` is the recall's string when it returned one; `digest`, the content hash, is
    computed only when a comparison needs it.
    """

    items: tuple[Item, ...]
    token_count: int
    text: str | None = None
    digest: str | None = None
    output: LayerOutput | None = None

    @classmethod
    def of(cls, output: LayerOutput) -> Pin:
        """The render of `output` (which it serves as is, unless the recall committed state)."""
        return cls(
            output.items, output.token_count, output.text, None, None if output.mutated_state else output
        )

    def served(self, layer_id: str) -> LayerOutput:
        """The pin as the output `layer_id` served (made once per pin)."""
        if self.output is None:
            self.output = LayerOutput(layer_id, self.items, self.token_count)
        return self.output

    def same(self, other: Pin) -> bool:
        """Whether `other` reads the same to the model: the very same items, the same recall
        string (a string always becomes the same one message), or else the same content hash."""
        if other.items is self.items:
            return True
        if self.text is not None and other.text is not None:
            return self.text == other.text
        if self.digest is None:
            self.digest = content_hash(self.items)
        if other.digest is None:
            other.digest = content_hash(other.items)
        return self.digest == other.digest


@dataclass(slots=True)
class Churn:
    """How often a layer's output changed while watched; decays across re-anchors."""

    observed: float = 0.0
    changed: float = 0.0
    rebill_tokens: float = 0.0

    @property
    def rate(self) -> float:
        """Share of watched assemblies with a change, 0..1."""
        return self.changed / self.observed if self.observed else 0.0


@dataclass(slots=True)
class Epoch:
    """A run of assemblies sharing one set of pins."""

    id: str
    generation: int
    instructions_hash: str
    reason: ReanchorReason
    auto_band: dict[str, Band]
    pins: dict[str, Pin] = field(default_factory=dict)
    assemblies: int = 0
    anchor_tokens: int = 0
    cache_blind: bool = False
    misses: int = 0


class AnchorStore:
    """A harness's anchoring memory: epochs per lineage, churn per layer id (with each layer's
    last live render), pending `cache-miss` re-anchors."""

    def __init__(self, config: ContextCacheConfig):
        self.config = config
        self.epochs: OrderedDict[str, Epoch] = OrderedDict()
        self.churn: dict[str, Churn] = {}
        self.pending: dict[str, ReanchorReason] = {}
        self.live_renders: dict[str, Pin] = {}
        #: How the last new epoch banded and pinned its outputs (`NewEpochPlan`).
        self.new_epoch_plan: NewEpochPlan | None = None
        self._instructions: tuple[str, str] = ("", _text_hash(""))

    def instructions_hash(self, instructions: str) -> str:
        """The hash of `instructions`, kept for the last text (most steps repeat theirs)."""
        text, digest = self._instructions
        if text != instructions:
            digest = _text_hash(instructions)
            self._instructions = (instructions, digest)
        return digest

    def churn_of(self, layer_id: str) -> Churn:
        """The churn record of a layer (created empty)."""
        found = self.churn.get(layer_id)
        if found is None:
            found = self.churn[layer_id] = Churn()
        return found

    def reason_to_reanchor(
        self, epoch: Epoch | None, key: str, instructions_hash: str
    ) -> ReanchorReason | None:
        """Why the coming assembly must open a new epoch, checked before banding."""
        if epoch is None:
            return "cold-start"
        if epoch.instructions_hash != instructions_hash:
            return "instructions-changed"
        pending = self.pending.get(key)
        if pending is not None:
            return pending
        if epoch.assemblies >= self.config.max_epoch_assemblies:
            return "max-age"
        return None

    def open_epoch(
        self, key: str, reason: ReanchorReason, instructions_hash: str, auto_layers: Sequence[str]
    ) -> Epoch:
        """Start a new epoch for `key`: no pins, auto layers re-banded by churn (AN-6)."""
        previous = self.epochs.get(key)
        bands = {
            layer_id: self._band_for(layer_id, previous.auto_band.get(layer_id) if previous else None)
            for layer_id in auto_layers
        }
        decay = self.config.churn_decay
        for layer_id in auto_layers:
            churn = self.churn.get(layer_id)
            if churn is not None:
                churn.observed *= decay
                churn.changed *= decay
                churn.rebill_tokens *= decay
        generation = previous.generation + 1 if previous else 0
        epoch = Epoch(
            id=f"{key}#{generation}",
            generation=generation,
            instructions_hash=instructions_hash,
            reason=reason,
            auto_band=bands,
            cache_blind=previous.cache_blind if previous else False,
            misses=previous.misses if previous else 0,
        )
        self.pending.pop(key, None)
        self.epochs[key] = epoch
        self.epochs.move_to_end(key)
        while len(self.epochs) > MAX_LINEAGES:
            oldest, _ = self.epochs.popitem(last=False)
            self.pending.pop(oldest, None)
        return epoch

    def _band_for(self, layer_id: str, current: Band | None) -> Band:
        band: Band = current or "anchor"
        churn = self.churn.get(layer_id)
        if churn is None or churn.observed < self.config.min_churn_samples:
            return band
        if churn.rate >= self.config.auto_demote_churn:
            return "live"
        if churn.rate <= self.config.auto_promote_churn:
            return "anchor"
        return band

    def note_cache_outcome(self, key: str, usage: RoundUsage, expected_tokens: int) -> None:
        """Judge round 0 of a call: a clear miss re-anchors at the next assembly (AN-5)."""
        epoch = self.epochs.get(key)
        if epoch is None or epoch.cache_blind:
            return
        if usage.cached_tokens is None:
            epoch.cache_blind = True
            return
        if usage.cached_tokens == 0 and (usage.cache_write_tokens or 0) > 0:
            return  # the prefix was written just now, not missed
        if epoch.assemblies < self.config.min_epoch_assemblies:
            return
        if usage.cached_tokens >= min(self.config.min_cached_tokens, expected_tokens * 0.5):
            epoch.misses = 0
            return
        epoch.misses += 1
        if epoch.misses >= MAX_CONSECUTIVE_MISSES:
            epoch.cache_blind = True
            return
        self.pending[key] = "cache-miss"

    def watch_live(self, output: LayerOutput, count: bool) -> None:
        """Count a live render toward its layer's churn against the previous live render, so
        a demoted `auto` layer that calms down can be promoted again (AN-6)."""
        render = Pin.of(output)
        previous = self.live_renders.get(output.layer_id)
        self.live_renders[output.layer_id] = render
        if count and previous is not None:
            churn = self.churn_of(output.layer_id)
            churn.observed += 1
            churn.changed += not previous.same(render)

    def drop(self, key: str) -> None:
        """Forget a lineage (a child execution that ended)."""
        self.epochs.pop(key, None)
        self.pending.pop(key, None)


# --- banding -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LayerOutput:
    """One layer's recall output; `mutated_state` when the recall committed new state, `text`
    the recall's string when it returned one (its one developer message)."""

    layer_id: str
    items: tuple[Item, ...]
    token_count: int
    mutated_state: bool = False
    text: str | None = None


@dataclass(frozen=True, slots=True)
class ServeInfo:
    """How a layer's output was placed and served in one assembly (LU-2)."""

    placement: Band
    served: Literal["fresh", "pinned"]
    changed: bool
    churn_rate: float
    rebill_tokens: float


_FRESH_ANCHOR = ServeInfo("anchor", "fresh", False, 0.0, 0.0)


class EpochFigures(NamedTuple):
    """The epoch behind one assembly, in plain values: its `EpochUsage` (a pydantic model,
    dearer to build than the whole banding of a cheap layer) is made only when a usage
    snapshot is read (`usage()`)."""

    id: str
    age: int
    anchor_tokens: int
    live_tokens: int
    delta_tokens: int
    reanchor_reason: ReanchorReason | None

    def usage(self) -> EpochUsage:
        """These figures as the snapshot's `EpochUsage` (LU-3)."""
        return EpochUsage(
            id=self.id,
            age=self.age,
            anchor_tokens=self.anchor_tokens,
            live_tokens=self.live_tokens,
            delta_tokens=self.delta_tokens,
            reanchor_reason=self.reanchor_reason,
        )


class BandedView(NamedTuple):
    """The layer part of one assembly: bands, updates, what each layer served, the epoch.

    A named tuple (immutable, like a frozen dataclass) because every model step with layers
    builds one, and a frozen dataclass sets each field through `object.__setattr__`.
    """

    anchor: tuple[Item, ...]
    live: tuple[Item, ...]
    supersedes: tuple[Item, ...]
    served: tuple[LayerOutput, ...]
    info: Mapping[str, ServeInfo]
    epoch: EpochFigures | None
    key: str | None

    def info_of(self, layer_id: str) -> ServeInfo:
        """How `layer_id` was served (a layer with no record counts as a fresh anchor)."""
        return self.info.get(layer_id, _FRESH_ANCHOR)


@dataclass(frozen=True, slots=True)
class _Stale:
    layer_id: str
    action: Literal["replace", "retract", "add"]
    previous: tuple[Item, ...]
    current: tuple[Item, ...]


class _Bands:
    """The bands of one assembly while they are filled in (a plain class: a dataclass with
    default factories costs several times as much to make, once per step)."""

    __slots__ = ("anchor", "info", "live", "live_tokens", "plan", "served", "stale")

    def __init__(self) -> None:
        #: The `NewEpochPlan` the anchor band is, if it is one.
        self.plan: NewEpochPlan | None = None
        self.anchor: list[Item] = []
        self.live: list[Item] = []
        self.live_tokens = 0
        self.served: list[LayerOutput] = []
        self.info: dict[str, ServeInfo] = {}
        self.stale: list[_Stale] = []


async def band_outputs(
    outputs: Sequence[LayerOutput],
    placements: Mapping[str, str],
    *,
    store: AnchorStore,
    key: str,
    instructions: str | None,
    window: float | None,
    render_delta: RenderDelta,
    tokens: Callable[[Item], int] = estimate_item_tokens,
) -> BandedView:
    """Band one assembly's recall `outputs` (slot-ordered); `placements` maps the layer ids of
    the active set to their declared placement. `window` is the token room for the layer part
    (None: unbounded); `tokens` estimates one item (the harness's memo, so a pin re-sent
    all epoch long is estimated once)."""
    if not store.config.enabled:
        return BandedView(
            anchor=tuple(i for o in outputs for i in o.items),
            live=(),
            supersedes=(),
            served=tuple(outputs),
            info={o.layer_id: ServeInfo("anchor", "fresh", False, 0.0, 0.0) for o in outputs},
            epoch=None,
            key=None,
        )
    instructions_hash = store.instructions_hash(instructions or "")
    auto_layers = [layer_id for layer_id, p in placements.items() if p == "auto"]
    epoch = store.epochs.get(key)
    reason = store.reason_to_reanchor(epoch, key, instructions_hash)
    if epoch is None or reason is not None:
        epoch = store.open_epoch(key, reason or "cold-start", instructions_hash, auto_layers)
    else:
        store.epochs.move_to_end(key)
    bands = _band_and_pin(epoch, outputs, placements, store, count_churn=True)
    plan = bands.plan
    anchor_tokens = sum(map(tokens, bands.anchor)) if plan is None else plan.anchor_tokens(tokens)
    if bands.stale:
        supersedes, undescribed = await _supersedes(bands.stale, epoch.id, render_delta)
        delta_tokens = estimate_items(supersedes)
    else:  # nothing changed since the pins: no update message (most assemblies)
        supersedes, undescribed, delta_tokens = (), False, 0
    config = store.config
    pressure = delta_tokens > max(config.min_pressure_tokens, config.delta_budget_fraction * anchor_tokens)
    overflow = undescribed or (
        window is not None and anchor_tokens + bands.live_tokens + delta_tokens > window
    )
    if pressure or overflow:
        epoch = store.open_epoch(
            key, "delta-pressure" if pressure else "delta-overflow", instructions_hash, auto_layers
        )
        bands = _band_and_pin(epoch, outputs, placements, store, count_churn=False)
        anchor_tokens = sum(map(tokens, bands.anchor))
        supersedes, delta_tokens = (), 0
    epoch.assemblies += 1
    epoch.anchor_tokens = anchor_tokens
    figures = EpochFigures(
        epoch.id,
        epoch.assemblies,
        anchor_tokens,
        bands.live_tokens,
        delta_tokens,
        epoch.reason if epoch.assemblies == 1 else None,
    )
    return BandedView(
        tuple(bands.anchor),
        tuple(bands.live),
        tuple(supersedes),
        tuple(bands.served),
        bands.info,
        figures,
        key,
    )


def _band_and_pin(
    epoch: Epoch,
    outputs: Sequence[LayerOutput],
    placements: Mapping[str, str],
    store: AnchorStore,
    *,
    count_churn: bool,
) -> _Bands:
    bands = _Bands()
    if not epoch.pins and epoch.assemblies == 0:
        # A new epoch (every turn on a new thread opens one) pins every anchored output as it
        # is and serves it fresh, unchanged: what `_serve_pin` would do for each, without its
        # comparisons; the split and the pins are the store's `NewEpochPlan` for these outputs.
        plan = store.new_epoch_plan
        if plan is None or not plan.fits(outputs, placements, epoch.auto_band):
            plan = store.new_epoch_plan = NewEpochPlan(outputs, placements, epoch.auto_band, store)
        for output in plan.live:
            _serve_live(bands, output, store, count_churn)
        epoch.pins.update(plan.pins)
        bands.plan = plan
        bands.anchor.extend(plan.anchor)
        bands.served.extend(plan.served)
        info = bands.info
        for layer_id, churn in plan.churns:
            if count_churn:
                churn.observed += 1
            # an unchanged layer's figures are the plain fresh anchor's (rate 0, no re-bill)
            info[layer_id] = (
                _FRESH_ANCHOR
                if not churn.changed and not churn.rebill_tokens
                else _serve_info("anchor", "fresh", False, churn.rate, churn.rebill_tokens)
            )
        return bands
    anchored: dict[str, LayerOutput] = {}
    for output in outputs:
        if _is_live(output, placements, epoch.auto_band):
            _serve_live(bands, output, store, count_churn)
        else:
            anchored[output.layer_id] = output
    for layer_id, pin in epoch.pins.items():
        _serve_pin(bands, epoch, layer_id, pin, anchored.get(layer_id), placements, store, count_churn)
    for layer_id, output in anchored.items():
        if layer_id in epoch.pins:
            continue
        churn = store.churn_of(layer_id)
        if count_churn:
            churn.observed += 1
            churn.changed += 1
        bands.stale.append(_Stale(layer_id, "add", (), output.items))
        bands.served.append(output)
        bands.info[layer_id] = ServeInfo("anchor", "fresh", True, churn.rate, churn.rebill_tokens)
    return bands


def _is_live(output: LayerOutput, placements: Mapping[str, str], auto_band: Mapping[str, Band]) -> bool:
    """Whether `output` renders after the history: its layer is not in the active set, its
    recall committed state (AN-7), it is placed `live`, or it is `auto` and banded live."""
    placement = placements.get(output.layer_id)
    band = auto_band.get(output.layer_id, "anchor") if placement == "auto" else placement
    return placement is None or output.mutated_state or band == "live"


def _serve_live(bands: _Bands, output: LayerOutput, store: AnchorStore, count_churn: bool) -> None:
    """Serve `output` fresh in the live band, counting it toward its layer's churn."""
    bands.live.extend(output.items)
    bands.live_tokens += output.token_count
    bands.served.append(output)
    store.watch_live(output, count_churn)
    churn = store.churn_of(output.layer_id)  # `changed` is about pins: a live render has none
    bands.info[output.layer_id] = ServeInfo("live", "fresh", False, churn.rate, churn.rebill_tokens)


class NewEpochPlan:
    """How a new epoch bands and pins one list of recall outputs, worked out once for them.

    A new epoch's banding depends only on the outputs (the very objects: an unchanged string
    recall is served as the same output, `LayerMemory.render_text`), the declared placements
    and the epoch's `auto` bands; the store keeps the plan of the last new epoch and reuses it
    while all three are the same, so the next thread's first assembly pins by copying a dict.
    What moves between epochs — each layer's churn — is read afresh from `churns` every time.
    Pins are shared between the epochs planned alike: a pin's own later changes (its digest,
    its served output) are worked out from its items, so they hold for every such epoch.
    """

    __slots__ = (
        "_counted",
        "anchor",
        "auto_band",
        "churns",
        "live",
        "outputs",
        "pins",
        "placements",
        "served",
    )

    def __init__(
        self,
        outputs: Sequence[LayerOutput],
        placements: Mapping[str, str],
        auto_band: Mapping[str, Band],
        store: AnchorStore,
    ):
        self.outputs = tuple(outputs)
        self.placements = dict(placements)
        self.auto_band = dict(auto_band)
        self.live: list[LayerOutput] = []
        anchored: dict[str, LayerOutput] = {}
        for output in outputs:
            if _is_live(output, placements, auto_band):
                self.live.append(output)
            else:
                anchored[output.layer_id] = output
        self.pins = {layer_id: Pin.of(output) for layer_id, output in anchored.items()}
        self.anchor = [item for output in anchored.values() for item in output.items]
        self.served = [pin.served(layer_id) for layer_id, pin in self.pins.items()]
        self.churns = [(layer_id, store.churn_of(layer_id)) for layer_id in anchored]
        #: The estimator the anchor band was last counted with, and its count.
        self._counted: tuple[Callable[[Item], int], int] | None = None

    def anchor_tokens(self, tokens: Callable[[Item], int]) -> int:
        """The tokens of the anchor band by `tokens`, counted once per estimator (the same
        items always count the same)."""
        counted = self._counted
        if counted is None or counted[0] != tokens:
            counted = self._counted = (tokens, sum(map(tokens, self.anchor)))
        return counted[1]

    def fits(
        self, outputs: Sequence[LayerOutput], placements: Mapping[str, str], auto_band: Mapping[str, Band]
    ) -> bool:
        """Whether this plan is the one of these very outputs, placements and `auto` bands."""
        mine = self.outputs
        return (
            len(outputs) == len(mine)
            and all(map(operator.is_, outputs, mine))
            and placements == self.placements
            and auto_band == self.auto_band
        )


def _serve_pin(
    bands: _Bands,
    epoch: Epoch,
    layer_id: str,
    pin: Pin,
    fresh: LayerOutput | None,
    placements: Mapping[str, str],
    store: AnchorStore,
    count_churn: bool,
) -> None:
    """Serve a pin whatever happened to its layer: dropping it would move the prefix."""
    bands.anchor.extend(pin.items)
    bands.served.append(pin.output or pin.served(layer_id))
    churn = store.churn.get(layer_id) or store.churn_of(layer_id)
    served: Literal["fresh", "pinned"] = "fresh" if epoch.assemblies == 0 else "pinned"  # first render
    if fresh is None:
        if layer_id in placements:  # quiet this time, or moved live: withdraw the pinned block
            bands.stale.append(_Stale(layer_id, "retract", pin.items, ()))
            bands.info[layer_id] = ServeInfo("anchor", served, True, churn.rate, churn.rebill_tokens)
        return
    changed = fresh.items is not pin.items and not pin.same(Pin.of(fresh))
    if count_churn:
        churn.observed += 1
        if changed:
            churn.changed += 1
            churn.rebill_tokens += epoch.anchor_tokens
    if changed:
        bands.stale.append(_Stale(layer_id, "replace", pin.items, fresh.items))
    bands.info[layer_id] = _serve_info("anchor", served, changed, churn.rate, churn.rebill_tokens)


@lru_cache(maxsize=1024)
def _serve_info(
    placement: Band, served: Literal["fresh", "pinned"], changed: bool, churn_rate: float, rebill: float
) -> ServeInfo:
    """The `ServeInfo` of these figures, made once: a layer whose figures repeat (most do,
    assembly after assembly) shares one frozen record instead of building it again."""
    return ServeInfo(placement, served, changed, churn_rate, rebill)


# --- the update message --------------------------------------------------------------------

_RETRACTED = "This block is withdrawn; ignore it."
_PREAMBLE = "Each update below replaces the earlier block of the same layer in this context; where they differ, the update is current."


def _text_of(items: Sequence[Item]) -> str:
    return "\n".join(i.text for i in items if isinstance(i, MessageItem) and i.text)


async def _supersedes(
    stale: Sequence[_Stale], epoch_id: str, render_delta: RenderDelta
) -> tuple[tuple[Item, ...], bool]:
    """One developer message with every update, and whether some change had no words."""
    if not stale:
        return (), False
    blocks: list[str] = []
    undescribed = False
    for entry in stale:
        if entry.action == "retract" or not entry.current:
            body: str | None = _RETRACTED
        else:
            body = (
                await render_delta(entry.layer_id, entry.previous, entry.current)
                if entry.action == "replace"
                else None
            )
            body = body or _text_of(entry.current) or None
        if body is None:
            undescribed = True
            continue
        blocks.append(f'<update layer="{entry.layer_id}" action="{entry.action}">\n{body}\n</update>')
    if not blocks:
        return (), undescribed
    text = "\n".join((f'<context_updates epoch="{epoch_id}">', _PREAMBLE, *blocks, "</context_updates>"))
    return (developer_message(text),), undescribed
