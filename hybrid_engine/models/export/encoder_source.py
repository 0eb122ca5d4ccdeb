"""What a local bi-encoder folder says about how it embeds: pooling, normalisation, maximum
length and the query and document prefixes, read from its sentence-transformers configs and
overridable by the caller.

A sentence-transformers folder (``modules.json``: Transformer, Pooling, optionally
Normalize) carries every setting; a plain Hugging Face folder (``config.json``, weights,
``tokenizer.json``) needs its pooling named. Read in the layouts of sentence-transformers 2-4
(``pooling_mode_*_tokens`` flags, ``sentence_bert_config.json``) and 5 (``pooling_mode``, the
tokenizer's ``model_max_length``). Prefixes come from ``config_sentence_transformers.json``'s
``prompts``: ``"query"`` for queries, and the first non-empty of ``"document"``,
``"passage"``, ``"corpus"`` for documents, the names sentence-transformers' ``encode_query``
and ``encode_document`` look up. Non-empty: sentence-transformers 5 saves an empty
``"document"`` prompt into every folder it writes, and its ``encode_document`` then takes it,
dropping e5's ``"passage: "``; the engine keeps the prefix the model was trained with.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export.common import model_positions, read_json, require
from hybrid_engine.models.store import BI_ENCODER_POOLINGS

DOCUMENT_PROMPTS = ("document", "passage", "corpus")
"""Prompt names read as the document prefix, the first non-empty one (in
sentence-transformers' ``encode_document`` order)."""
_LEGACY_POOLINGS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "lasttoken",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}
_LONG_POSITIONS = 8192
"""A tokenizer ``model_max_length`` above this is transformers' "no limit" placeholder."""


@dataclass(frozen=True)
class EncoderSettings:
    """How a bi-encoder embeds a text: what its prepared manifest records.

    Attributes
    ----------
    max_length : int
        Tokens kept per text, special tokens (and the prefix) included.
    pooling : {"mean", "cls", "lasttoken"}
        Token states to one vector: their mean under the attention mask, the first token's
        state, or the last unpadded token's state.
    normalize : bool
        Whether vectors are L2-normalised.
    query_prefix, document_prefix : str
        Prepended to each query and each document before tokenizing ("" for none).
    dim : int
        Width of the hidden states, so of the vectors.
    model_type : str
        The transformer's ``config.json`` ``model_type`` (``"bert"``, ``"mpnet"``...).
    """

    max_length: int
    pooling: str
    normalize: bool
    query_prefix: str
    document_prefix: str
    dim: int
    model_type: str

    def manifest(self) -> dict[str, Any]:
        """The entries a prepared folder's manifest records (``store.read_model`` reads them)."""
        return {
            "dim": self.dim,
            "max_length": self.max_length,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "prefixes": {"query": self.query_prefix, "document": self.document_prefix},
            "model_type": self.model_type,
        }


def read_settings(
    source: Path,
    *,
    pooling: str | None = None,
    normalize: bool | None = None,
    max_length: int | None = None,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
) -> EncoderSettings:
    """The settings of the bi-encoder in ``source``, each given one replacing what the folder
    says.

    Raises
    ------
    HybridEngineError
        ``source`` is not a model folder; its modules are not Transformer, Pooling and an
        optional Normalize (a Dense layer, say); its pooling is one the engine does not run
        (max, weighted mean), or a plain Hugging Face folder was given no ``pooling``; the
        prompts are left out of the pooling (``include_prompt: false``); a ``max_length``
        past the model's positions.
    """
    if not (source / "config.json").is_file():
        raise HybridEngineError(
            f"{source} has no config.json; give a local Hugging Face or sentence-transformers "
            "model folder (the one save_pretrained or SentenceTransformer.save wrote)"
        )
    try:
        config = require("transformers").AutoConfig.from_pretrained(str(source))
    except (OSError, ValueError, KeyError) as exc:
        raise HybridEngineError(
            f"transformers cannot read {source}/config.json ({exc}); give the folder of a "
            "model transformers knows (its config.json names a model_type)"
        ) from None
    found = _sentence_transformers_settings(source) if (source / "modules.json").is_file() else {}
    chosen = pooling if pooling is not None else found.get("pooling")
    if chosen is None:
        raise HybridEngineError(
            f"{source} has no modules.json to say how it pools token states; name the pooling "
            f"its model was trained with: {' | '.join(BI_ENCODER_POOLINGS)} (--pooling)"
        )
    _check_pooling(source, chosen)
    positions = model_positions(config.to_dict())
    settings = EncoderSettings(
        max_length=min(found.get("max_length", positions), positions),
        pooling=chosen,
        normalize=found.get("normalize", True),
        query_prefix=found.get("query_prefix", ""),
        document_prefix=found.get("document_prefix", ""),
        dim=int(config.hidden_size),
        model_type=str(config.model_type),
    )
    given: dict[str, Any] = {
        "normalize": normalize,
        "max_length": max_length,
        "query_prefix": query_prefix,
        "document_prefix": document_prefix,
    }
    settings = replace(settings, **{k: v for k, v in given.items() if v is not None})
    if not 2 <= settings.max_length <= positions:
        raise HybridEngineError(
            f"max_length {settings.max_length} is outside what {source} takes (2 to "
            f"{positions} tokens)"
        )
    return settings


def _check_pooling(source: Path, pooling: str) -> None:
    if pooling not in BI_ENCODER_POOLINGS:
        raise HybridEngineError(
            f"{source} pools token states by {pooling!r}, which the engine does not run; it "
            f"runs {', '.join(BI_ENCODER_POOLINGS)}"
        )


def _sentence_transformers_settings(source: Path) -> dict[str, Any]:
    """What the sentence-transformers configs of ``source`` say (pooling, normalize,
    max_length, prefixes), checking the module chain."""
    modules = [m["type"].rsplit(".", 1)[-1] for m in read_json(source / "modules.json")]
    if modules[:2] != ["Transformer", "Pooling"] or modules[2:] not in ([], ["Normalize"]):
        raise HybridEngineError(
            f"{source} chains the modules {modules}; the engine runs Transformer, Pooling and "
            "an optional Normalize (a Dense projection or other layers cannot be exported)"
        )
    pooling = read_json(source / "1_Pooling" / "config.json")
    settings: dict[str, Any] = {
        "pooling": _pooling_mode(source, pooling),
        "normalize": modules[2:] == ["Normalize"],
    }
    length = _max_seq_length(source)
    if length is not None:
        settings["max_length"] = length
    config_file = source / "config_sentence_transformers.json"
    prompts = read_json(config_file).get("prompts") or {} if config_file.is_file() else {}
    settings["query_prefix"] = prompts.get("query", "")
    documents = [prompts[name] for name in DOCUMENT_PROMPTS if prompts.get(name)]
    settings["document_prefix"] = documents[0] if documents else ""
    if prompts and pooling.get("include_prompt") is False:
        raise HybridEngineError(
            f"{source} leaves its prompts out of the pooling (include_prompt: false), which "
            "the engine does not run: it pools every token it feeds the model"
        )
    return settings


def _pooling_mode(source: Path, config: dict[str, Any]) -> str:
    """The one pooling ``1_Pooling/config.json`` names, in either layout."""
    mode = config.get("pooling_mode")
    if isinstance(mode, str):
        return mode
    modes = [name for flag, name in _LEGACY_POOLINGS.items() if config.get(flag)]
    if len(modes) != 1:
        raise HybridEngineError(
            f"{source}/1_Pooling/config.json names {modes or 'no'} pooling modes; the engine "
            f"runs exactly one of {', '.join(BI_ENCODER_POOLINGS)}"
        )
    return modes[0]


def _max_seq_length(source: Path) -> int | None:
    """The model's ``max_seq_length``: in ``sentence_bert_config.json`` (sentence-transformers
    before 5), else the tokenizer's ``model_max_length`` (where 5 saves it) unless that is the
    no-limit placeholder; None when neither says."""
    legacy = source / "sentence_bert_config.json"
    if legacy.is_file() and read_json(legacy).get("max_seq_length") is not None:
        return int(read_json(legacy)["max_seq_length"])
    tokenizer = source / "tokenizer_config.json"
    length = read_json(tokenizer).get("model_max_length") if tokenizer.is_file() else None
    return int(length) if length is not None and length <= _LONG_POSITIONS else None


def sentence_transformer(
    source: Path,
    *,
    dim: int,
    pooling: str,
    normalize: bool,
    max_length: int | None = None,
    model_kwargs: dict[str, Any] | None = None,
) -> Any:
    """sentence-transformers over the transformer in ``source`` with the given pooling and
    normalisation (Transformer, Pooling, and Normalize when ``normalize``), on the CPU:
    the model ``read_settings`` describes, whatever the folder's own modules say."""
    st = require("sentence_transformers")
    layers = require("sentence_transformers.models")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its deprecation notes on module paths are not ours
        transformer = layers.Transformer(
            str(source), max_seq_length=max_length, model_kwargs=model_kwargs
        )
        modules = [transformer, layers.Pooling(dim, pooling_mode=pooling)]
        if normalize:
            modules.append(layers.Normalize())
        return st.SentenceTransformer(modules=modules, device="cpu")
