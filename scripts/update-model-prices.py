#!/usr/bin/env python3
"""Writes the prices of catalog/model-catalog.yaml from LiteLLM's published price table.

LiteLLM ships its table of model prices (`model_prices_and_context_window_backup.json`) inside its PyPI
package. This script downloads a pinned release's wheel from PyPI, checks it against the sha256 PyPI
lists for it, reads the table out of the wheel, finds each catalog model in it (by provider and model id)
and rewrites only the `pricing:` blocks of the catalog and the header lines that name the source. The
rest of the file (layout, comments, properties) is left as it is: the file is edited as text, since a
YAML library would drop the comments.

    scripts/update-model-prices.py            # rewrite the catalog's prices
    scripts/update-model-prices.py --check    # exit 1 when the catalog is not what would be written
    scripts/update-model-prices.py --version 1.111.0   # another release of LiteLLM

Models the table does not list keep empty prices (their calls' cost is unknown) and are printed.
Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

LITELLM_VERSION = "1.110.2"
RELEASE_JSON = "https://pypi.org/pypi/litellm/{version}/json"
PROJECT_JSON = "https://pypi.org/pypi/litellm/json"
TABLE_IN_WHEEL = "litellm/model_prices_and_context_window_backup.json"
CATALOG = Path(__file__).resolve().parent.parent / "catalog" / "model-catalog.yaml"
TIMEOUT_SECONDS = 120

# Catalog provider type -> (key prefix in LiteLLM's table, LiteLLM's `litellm_provider`). An entry is
# used only when its `litellm_provider` is the provider's own: the table also lists the same model
# resold by others (Azure, Bedrock, OpenRouter, …) at their prices.
PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("", "openai"),
    "anthropic": ("", "anthropic"),
    "google-gemini": ("gemini/", "gemini"),
    "fireworks": ("fireworks_ai/", "fireworks_ai"),
    "zai": ("zai/", "zai"),
    "moonshot": ("moonshot/", "moonshot"),
    "alibaba": ("dashscope/", "dashscope"),
    "together": ("together_ai/", "together_ai"),
}

# (provider type, catalog model_id) -> the table's key, for models the table names otherwise than
# `<prefix><model_id>`. Every model of the catalog is found by its own id today; a renamed one goes here
# rather than into a looser match, which could pick a different model's price.
RENAMED: dict[tuple[str, str], str] = {}

# The table's per-token fields -> the catalog's per-million-token fields.
PRICE_FIELDS = (
    ("input_per_mtok", "input_cost_per_token"),
    ("output_per_mtok", "output_cost_per_token"),
    ("cache_read_per_mtok", "cache_read_input_token_cost"),
    ("cache_write_per_mtok", "cache_creation_input_token_cost"),
    ("reasoning_per_mtok", "output_cost_per_reasoning_token"),
)
# Always written (empty when unknown), so every model shows what is and is not priced.
ALWAYS_WRITTEN = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok")
# `input_cost_per_token_above_272k_tokens` and the like: the price of a call whose prompt is longer.
TIERED_KEY = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|"
    r"cache_creation_input_token_cost|output_cost_per_reasoning_token)_above_(\d+)k_tokens$"
)

HEADER_START = "# Prices (`pricing`"
HEADER_CONTINUATION = "#   "


class PriceError(Exception):
    """Something this script cannot work with: the download, the wheel, the table or the catalog."""


@dataclass
class Prices:
    """A model's prices in USD per million tokens, as decimal text (exact, no float noise)."""

    base: dict[str, str] = field(default_factory=dict)
    long_context_above: int | None = None
    long_context: dict[str, str] = field(default_factory=dict)


@dataclass
class Source:
    version: str
    filename: str
    sha256: str
    uploaded: str  # the wheel's upload date on PyPI, YYYY-MM-DD


def fetch(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "trueforge-update-model-prices"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
        return response.read()


def release_files(version: str) -> tuple[str, list[dict]]:
    """The files of a release and the URL their relative links are relative to. PyPI's per-release JSON is
    asked first; some mirrors serve only the project's JSON, which lists every release's files too."""
    url = RELEASE_JSON.format(version=version)
    try:
        return url, json.loads(fetch(url))["urls"]
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise PriceError(f"{url}: HTTP {error.code}") from error
    try:
        releases = json.loads(fetch(PROJECT_JSON))["releases"]
    except urllib.error.HTTPError as error:
        raise PriceError(f"{PROJECT_JSON}: HTTP {error.code}") from error
    if version not in releases:
        raise PriceError(f"litellm {version} is not on PyPI")
    return PROJECT_JSON, releases[version]


def pick_wheel(files: list[dict]) -> dict:
    """A pure-Python wheel when the release has one, else the Linux x86-64 one, else the first by name.
    The price table is the same in each; the choice only has to be the same on every run."""
    wheels = sorted((f for f in files if f["filename"].endswith(".whl")), key=lambda f: f["filename"])
    if not wheels:
        raise PriceError("the release has no wheel")
    for marker in ("-none-any.whl", "manylinux_2_28_x86_64.whl"):
        for wheel in wheels:
            if wheel["filename"].endswith(marker):
                return wheel
    return wheels[0]


def download_table(version: str) -> tuple[dict, Source]:
    base_url, files = release_files(version)
    wheel = pick_wheel(files)
    expected = wheel["digests"]["sha256"]
    data = fetch(urllib.parse.urljoin(base_url, wheel["url"]))
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise PriceError(f"{wheel['filename']}: sha256 {actual}, PyPI lists {expected}")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            table = json.loads(archive.read(TABLE_IN_WHEEL))
    except (zipfile.BadZipFile, KeyError) as error:
        raise PriceError(f"{wheel['filename']}: no readable {TABLE_IN_WHEEL}: {error}") from error
    uploaded = wheel.get("upload_time_iso_8601") or wheel["upload_time"]
    return table, Source(version, wheel["filename"], actual, uploaded[:10])


def per_million(value: object) -> str | None:
    """A per-token price as USD per million tokens, written exactly (`2.5e-06` -> `2.5`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return format((Decimal(repr(value)) * 1_000_000).normalize(), "f")


def prices_of(entry: dict) -> tuple[Prices | None, str]:
    """The catalog's prices from one table entry, or why there are none."""
    prices = Prices()
    tiers = entry.get("tiered_pricing")
    if isinstance(tiers, list) and tiers:
        return tiered_prices(tiers)
    for ours, theirs in PRICE_FIELDS:
        price = per_million(entry.get(theirs))
        if price is not None:
            prices.base[ours] = price
    thresholds = set()
    for key, value in entry.items():
        match = TIERED_KEY.match(key)
        if not match:
            continue
        thresholds.add(int(match.group(2)) * 1000)
        ours = next(o for o, t in PRICE_FIELDS if t == match.group(1))
        price = per_million(value)
        if price is not None:
            prices.long_context[ours] = price
    if len(thresholds) > 1:
        return None, f"several long-context thresholds {sorted(thresholds)}"
    if thresholds:
        prices.long_context_above = thresholds.pop()
    return settled(prices)


def settled(prices: Prices) -> tuple[Prices | None, str]:
    """Drops reasoning prices that equal the output price (reasoning is billed as output unless it has a
    price of its own), and refuses prices without the two every call needs."""
    base, long = prices.base, prices.long_context
    if base.get("reasoning_per_mtok") == base.get("output_per_mtok"):
        base.pop("reasoning_per_mtok", None)
    # A long call's reasoning falls back to the base reasoning price before its own output price, so it
    # may be left out only when the base has none.
    long_output = long.get("output_per_mtok", base.get("output_per_mtok"))
    if "reasoning_per_mtok" not in base and long.get("reasoning_per_mtok") == long_output:
        long.pop("reasoning_per_mtok", None)
    if "input_per_mtok" not in prices.base or "output_per_mtok" not in prices.base:
        return None, "no input or output price"
    return prices, ""


def tiered_prices(tiers: list) -> tuple[Prices | None, str]:
    """`tiered_pricing`: prices by prompt length, `range: [from, to]` in tokens. Two tiers, the first from
    zero, are a base price and a long-context price; anything else is not something the catalog states."""
    try:
        tiers = sorted(tiers, key=lambda tier: tier["range"][0])
        starts = [int(tier["range"][0]) for tier in tiers]
    except (KeyError, TypeError, IndexError, ValueError):
        return None, "unreadable tiered_pricing"
    if len(tiers) > 2 or starts[0] != 0:
        return None, f"tiered_pricing with tiers starting at {starts}"
    prices = Prices()
    for index, tier in enumerate(tiers):
        target = prices.base if index == 0 else prices.long_context
        for ours, theirs in PRICE_FIELDS:
            price = per_million(tier.get(theirs))
            if price is not None:
                target[ours] = price
    if len(tiers) == 2:
        prices.long_context_above = starts[1]
    return settled(prices)


def lookup(table: dict, provider_type: str, model_id: str) -> tuple[Prices | None, str]:
    """The model's prices and the table key they came from, or `None` and why not."""
    if provider_type not in PROVIDERS:
        return None, f"no LiteLLM provider known for type {provider_type!r}"
    prefix, litellm_provider = PROVIDERS[provider_type]
    renamed = RENAMED.get((provider_type, model_id))
    candidates = [renamed] if renamed else [prefix + model_id, f"{litellm_provider}/{model_id}"]
    for key in dict.fromkeys(candidates):
        entry = table.get(key)
        if not isinstance(entry, dict) or entry.get("litellm_provider") != litellm_provider:
            continue
        if entry.get("mode", "chat") != "chat":
            return None, f"{key} is not a chat model ({entry.get('mode')})"
        prices, reason = prices_of(entry)
        if reason:
            return None, f"{key}: {reason}"
        if deprecated := entry.get("deprecation_date"):
            print(f"note: {provider_type}/{model_id} ({key}) is deprecated from {deprecated} in the table")
        return prices, key
    return None, f"not in the table as {' or '.join(dict.fromkeys(candidates))}"


def pricing_block(prices: Prices | None) -> list[str]:
    lines = ["        pricing:"]
    base = prices.base if prices else {}
    for name, _ in PRICE_FIELDS:
        if name in base:
            lines.append(f"          {name}: {base[name]}")
        elif name in ALWAYS_WRITTEN:
            lines.append(f"          {name}:")
    if prices and prices.long_context_above is not None:
        lines.append("          long_context:")
        lines.append(f"            above_input_tokens: {prices.long_context_above}")
        for name, _ in PRICE_FIELDS:
            if name in prices.long_context:
                lines.append(f"            {name}: {prices.long_context[name]}")
    return lines


def header(source: Source) -> list[str]:
    return [
        f"{HEADER_START}, USD per million tokens; see README.md) are written by scripts/update-model-prices.py",
        f"{HEADER_CONTINUATION}from LiteLLM's price table ({TABLE_IN_WHEEL}) in litellm {source.version},",
        f"{HEADER_CONTINUATION}uploaded to PyPI on {source.uploaded}: {source.filename},",
        f"{HEADER_CONTINUATION}sha256 {source.sha256}.",
        f"{HEADER_CONTINUATION}An empty price is one the table does not give: a call that needs it has an unknown cost.",
        f"{HEADER_CONTINUATION}Change the script (its mapping of catalog models to the table), not the prices.",
    ]


MODEL_LINE = re.compile(r"^      - model_id: ['\"]?(?P<id>[^'\"]+?)['\"]?\s*$")
PROVIDER_LINE = re.compile(r"^  - type: ['\"]?(?P<type>[^'\"]+?)['\"]?\s*$")


def rewrite(text: str, table: dict, source: Source) -> tuple[str, list[str]]:
    """The catalog with its prices and source header rewritten, and the models left unpriced."""
    lines = text.split("\n")
    out: list[str] = []
    unpriced: list[str] = []
    provider_type: str | None = None
    model_id: str | None = None
    index = 0
    header_written = False
    while index < len(lines):
        line = lines[index]
        if line.startswith(HEADER_START):
            index += 1
            while index < len(lines) and lines[index].startswith(HEADER_CONTINUATION):
                index += 1
            out.extend(header(source))
            header_written = True
            continue
        if match := PROVIDER_LINE.match(line):
            provider_type, model_id = match.group("type"), None
        elif match := MODEL_LINE.match(line):
            model_id = match.group("id")
        elif line == "        pricing:":
            if provider_type is None or model_id is None:
                raise PriceError(f"line {index + 1}: a pricing block outside a model")
            index += 1
            # The block is every following line indented deeper than `pricing:`.
            while index < len(lines) and lines[index].startswith("          "):
                index += 1
            prices, found = lookup(table, provider_type, model_id)
            if prices is None:
                unpriced.append(f"{provider_type}/{model_id}: {found}")
            out.extend(pricing_block(prices))
            continue
        out.append(line)
        index += 1
    if not header_written:
        raise PriceError(f"the catalog has no header line starting with {HEADER_START!r}")
    return "\n".join(out), unpriced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the catalog differs from what would be written")
    parser.add_argument("--version", default=LITELLM_VERSION, help=f"litellm release (default {LITELLM_VERSION})")
    parser.add_argument("--catalog", type=Path, default=CATALOG, help="the catalog file")
    args = parser.parse_args()

    try:
        table, source = download_table(args.version)
        current = args.catalog.read_text(encoding="utf-8")
        updated, unpriced = rewrite(current, table, source)
    except (PriceError, OSError, urllib.error.URLError, json.JSONDecodeError) as error:
        print(f"update-model-prices: {error}", file=sys.stderr)
        return 2

    for model in unpriced:
        print(f"unpriced: {model}")
    if args.check:
        if updated == current:
            print(f"{args.catalog}: prices match litellm {source.version}")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(), updated.splitlines(), str(args.catalog), "expected", lineterm=""
        )
        print("\n".join(diff))
        print(f"{args.catalog}: prices differ from litellm {source.version}; run scripts/update-model-prices.py")
        return 1
    if updated != current:
        args.catalog.write_text(updated, encoding="utf-8")
        print(f"{args.catalog}: prices written from litellm {source.version}")
    else:
        print(f"{args.catalog}: already up to date with litellm {source.version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
