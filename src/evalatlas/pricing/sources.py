"""Where prices come from: a user price file > named presets > the ``genai-prices`` library.

First match wins, and every :class:`ModelPrice` says which source priced it.

**User price file** (TOML or YAML, by extension), USD per million tokens::

    # prices.toml
    [models."my-finetune"]
    input = 1.0
    output = 4.0
    cache_read = 0.1        # optional; default: the input price
    cache_write = 1.25      # optional; default: the input price
    aliases = ["ft:my-finetune-2025"]   # optional extra names

    # prices.yaml
    models:
      my-finetune: {input: 1.0, output: 4.0}

Keys are normalised like model names (:func:`evalatlas.pricing.names.normalise_model_name`).

**genai-prices** (pydantic's maintained price data, bundled with the wheel, no network):
base prices per million tokens including cache read/write prices. Tiered prices
(e.g. Anthropic's higher rate above 200k input tokens per request) use the base tier,
because an episode's usage sums many requests and the tier applies per request.

Two things the library knows that a bare model name loses: the **provider** (the same
model costs differently at Groq and at Together; ``groq/llama-3.1-8b-instant`` is looked
up at Groq, and only falls back to a provider-less match) and **when** (prices change:
OpenAI's o3 fell from $10/$40 to $2/$8 per million on 2025-06-10). :meth:`PriceBook.
price_for` takes the time the tokens were spent (``at``) and returns the price in force
then, with ``valid_from`` (the date it took effect; None for the first listed price);
:meth:`PriceBook.schedule` lists every period of a model for vectorised pricing. User
files and presets have no dates: their price applies at any time.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalatlas.errors import InputError
from evalatlas.pricing.names import candidates, normalise_model_name, split_provider
from evalatlas.pricing.tables import DEFAULT_PRESETS, PRESETS


@dataclass(frozen=True)
class ModelPrice:
    """Prices of one model in USD per million tokens, and who said so.

    ``cache_read`` / ``cache_write`` are None when no source has a cache price; cost then
    charges those tokens at the input price. A table entry without cache prices takes
    them from genai-prices when it has them (said in ``notes``).
    """

    model: str
    input: float
    output: float
    cache_read: float | None
    cache_write: float | None
    source: str
    matched: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    valid_from: date | None = None
    """The date this price took effect (genai-prices start date); None: first listed."""

    def describe(self) -> str:
        """``genai-prices 0.2.3 (openai) o3, price from 2025-06-10`` (for ``cost_source``)."""
        since = f"price from {self.valid_from.isoformat()}" if self.valid_from else (
            "first listed price" if self.source.startswith("genai-prices") else "undated price")
        return f"{self.source} {self.matched or self.model}, {since}"


@dataclass(frozen=True)
class PricePeriod:
    """One entry of a model's price schedule (genai-prices' conditional prices).

    Active when the time is on/after ``start_date`` (UTC) and, if ``daily_window`` is set,
    inside that UTC time-of-day window (seconds since midnight, start inclusive, end
    exclusive; it may wrap past midnight). Later periods take precedence, as in
    genai-prices.
    """

    price: ModelPrice
    start_date: date | None = None
    daily_window: tuple[int, int] | None = None

    def active(self, when: datetime) -> bool:
        when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
        if self.start_date is not None and when.date() < self.start_date:
            return False
        if self.daily_window is not None:
            sec = when.hour * 3600 + when.minute * 60 + when.second
            lo, hi = self.daily_window
            return (lo <= sec < hi) if lo <= hi else (sec >= lo or sec < hi)
        return True


def _price(value: Any, file: Path, model: str, key: str) -> float:
    """A price of a price-file entry: a number >= 0 (not a boolean, not NaN), else an
    InputError naming the file, the model and the key (a missing price too)."""
    if value is None:
        raise InputError.at(file, "missing price (USD per million tokens)",
                            field=key, record=model)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError.at(file, f"price must be a number, got {value!r}",
                            field=key, record=model)
    if value < 0 or value != value:
        raise InputError.at(file, f"price must be >= 0, got {value!r}", field=key, record=model)
    return float(value)


def load_price_file(path: str | Path) -> dict[str, ModelPrice]:
    """Read a user price file (TOML or YAML) into ``{normalised name: ModelPrice}``.

    Errors name the file, the model and the field; an unknown key in an entry is an
    error (a typo such as ``ouput`` would otherwise price output at nothing).
    """
    import tomllib  # here, not at module level: 8.6 ms of every ingest's imports (with yaml)

    import yaml

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError.at(file, f"cannot read price file: {exc.strerror or exc}") from exc
    try:
        if file.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif file.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise InputError.at(file, "price file must end in .toml, .yaml or .yml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise InputError.at(file, f"not valid {file.suffix[1:].upper()}: {exc}") from exc
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise InputError.at(file, "expected a top-level 'models' table", field="models")
    allowed = {"input", "output", "cache_read", "cache_write", "aliases"}
    out: dict[str, ModelPrice] = {}
    source = f"file:{file}"
    for name, entry in models.items():
        name = str(name)
        if not isinstance(entry, dict):
            raise InputError.at(file, "expected a table of prices", record=name)
        unknown = set(entry) - allowed
        if unknown:
            raise InputError.at(file, f"unknown key(s) {sorted(unknown)}; allowed: "
                                f"{sorted(allowed)}", field=sorted(unknown)[0], record=name)
        price = ModelPrice(
            model=normalise_model_name(name),
            input=_price(entry.get("input"), file, name, "input"),
            output=_price(entry.get("output"), file, name, "output"),
            cache_read=(None if entry.get("cache_read") is None else
                        _price(entry["cache_read"], file, name, "cache_read")),
            cache_write=(None if entry.get("cache_write") is None else
                         _price(entry["cache_write"], file, name, "cache_write")),
            source=source,
            matched=name,
        )
        aliases = entry.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InputError.at(file, "aliases must be a list of strings", field="aliases",
                                record=name)
        for key in [name, *aliases]:
            out[normalise_model_name(key)] = price
    return out


def _preset_table(name: str) -> dict[str, ModelPrice]:
    if name not in PRESETS:
        raise ValueError(f"unknown price preset {name!r}; known: {sorted(PRESETS)}")
    return {
        normalise_model_name(model): ModelPrice(
            model=normalise_model_name(model), input=row[0], output=row[1],
            cache_read=row[2], cache_write=row[3], source=f"preset:{name}", matched=model)
        for model, row in PRESETS[name].items()
    }


def _base(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, Decimal | int | float):
        return float(value)
    base = getattr(value, "base", None)  # genai_prices.types.TieredPrices
    return float(base) if base is not None else None


def _seconds(t: Any) -> int:
    from genai_prices.types import _utc_timetz  # the library's own UTC conversion

    u = _utc_timetz(t)
    return u.hour * 3600 + u.minute * 60 + u.second


@lru_cache(maxsize=4096)
def _genai_schedule(model: str, provider: str | None) -> tuple[PricePeriod, ...] | None:
    """Every price period genai-prices has for ``model`` (at ``provider`` when it knows
    that provider and model), or None when it does not know the model."""
    try:
        import genai_prices
        from genai_prices import data_snapshot
        from genai_prices.types import TimeOfDateConstraint
    except ImportError:  # pragma: no cover - declared dependency
        return None
    snapshot = data_snapshot.get_snapshot()
    found = None
    if provider is not None:
        try:
            found = snapshot.find_provider_model(model, None, provider, None)
        except (LookupError, ValueError):
            found = None
    if found is None:
        try:
            found = snapshot.find_provider_model(model, None, None, None)
        except (LookupError, ValueError):
            return None
    prov, info = found
    entries = ([(None, info.prices)] if not isinstance(info.prices, list)
               else [(c.constraint, c.prices) for c in info.prices])
    periods: list[PricePeriod] = []
    for constraint, mp in entries:
        inp = _base(getattr(mp, "input_mtok", None))
        out = _base(getattr(mp, "output_mtok", None))
        if inp is None or out is None:
            continue
        notes = []
        if any(hasattr(getattr(mp, k, None), "tiers") for k in ("input_mtok", "output_mtok")):
            notes.append("tiered prices: base tier used")
        start = getattr(constraint, "start_date", None)
        window = None
        if isinstance(constraint, TimeOfDateConstraint):
            window = (_seconds(constraint.start_time), _seconds(constraint.end_time))
            notes.append("time-of-day price")
        periods.append(PricePeriod(ModelPrice(
            model=model, input=inp, output=out,
            cache_read=_base(getattr(mp, "cache_read_mtok", None)),
            cache_write=_base(getattr(mp, "cache_write_mtok", None)),
            source=f"genai-prices {genai_prices.__version__} ({prov.id})",
            matched=info.id, notes=tuple(notes), valid_from=start), start, window))
    return tuple(periods) or None


def in_force(periods: tuple[PricePeriod, ...] | list[PricePeriod], when: datetime
             ) -> ModelPrice:
    """The price of the last period active at ``when`` (the first period otherwise)."""
    for period in reversed(periods):
        if period.active(when):
            return period.price
    return periods[0].price


class PriceBook:
    """An ordered list of price sources; :meth:`price_for` returns the first match.

    ``price_file``: optional user file (highest priority); ``presets``: preset names in
    order (default :data:`~evalatlas.pricing.tables.DEFAULT_PRESETS`); ``library``:
    whether to fall back to genai-prices.
    """

    def __init__(
        self,
        price_file: str | Path | None = None,
        presets: tuple[str, ...] | list[str] | None = None,
        *,
        library: bool = True,
    ) -> None:
        self.tables: list[dict[str, ModelPrice]] = []
        if price_file is not None:
            self.tables.append(load_price_file(price_file))
        for name in DEFAULT_PRESETS if presets is None else presets:
            self.tables.append(_preset_table(name))
        self.library = library
        self._memo: dict[str, tuple[PricePeriod, ...] | None] = {}

    def price_for(self, model: str | None, at: datetime | None = None) -> ModelPrice | None:
        """Price of ``model`` in force at ``at`` (default: now) from the first source that
        knows it, else None. ``groq/llama-3.1-8b-instant`` is looked up at Groq."""
        periods = self.schedule(model)
        if periods is None:
            return None
        return in_force(periods, at or datetime.now(tz=UTC))

    def schedule(self, model: str | None) -> tuple[PricePeriod, ...] | None:
        """Every price period of ``model`` from the first source that knows it (memoised:
        ingest asks once per model); None when no source knows it."""
        if not model or not str(model).strip():
            return None
        if model not in self._memo:
            self._memo[model] = self._lookup(model)
        return self._memo[model]

    def _lookup(self, model: str) -> tuple[PricePeriod, ...] | None:
        keys = candidates(model)
        for table in self.tables:
            for key in keys:
                if key in table:
                    return (PricePeriod(self._fill_cache_prices(table[key], model)),)
        return self._library(model)

    def _library(self, model: str) -> tuple[PricePeriod, ...] | None:
        if not self.library:
            return None
        provider, rest = split_provider(model)
        if provider is not None:  # the provider's own listing first
            for key in dict.fromkeys([rest, *candidates(rest)]):
                found = _genai_schedule(key, provider)
                if found is not None and f"({provider})" in found[0].price.source:
                    return found
        for key in candidates(model):
            found = _genai_schedule(key, None)
            if found is not None:
                return found
        return None

    def _fill_cache_prices(self, price: ModelPrice, model: str) -> ModelPrice:
        """Complete a table entry that lacks cache prices from genai-prices, if it has them.

        The seed tables list input and output prices only; charging a cache read at the
        full input price would overstate e.g. gpt-5-mini's cached input tenfold.
        """
        if price.cache_read is not None and price.cache_write is not None:
            return price
        periods = self._library(model)
        lib = in_force(periods, datetime.now(tz=UTC)) if periods else None
        if lib is None or (lib.cache_read is None and lib.cache_write is None):
            return price
        return replace(
            price,
            cache_read=price.cache_read if price.cache_read is not None else lib.cache_read,
            cache_write=price.cache_write if price.cache_write is not None else lib.cache_write,
            notes=(*price.notes, f"cache prices from {lib.source}"),
        )
