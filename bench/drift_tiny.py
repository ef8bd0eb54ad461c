"""Tiny random-weight scoring models for the drift tests and benchmark, built offline from configs and saved to folders:
CLIP (text + image), DINOv2, OWLv2 (transformers) and a sentence-transformers BERT embedder."""

from __future__ import annotations

from pathlib import Path

WORDS = [
    "a", "photo", "of", "the", "an", "and", "with", "on", "in", "red", "blue", "green", "yellow", "white", "black", "cat",
    "dog", "clock", "car", "bus", "banana", "suitcase", "left", "right", "above", "below", "two", "three", "four", "image",
]


def _clip_tokenizer(folder: Path):
    """A CLIP BPE tokenizer over letters and a few whole words (no merges needed for single characters)."""
    from transformers import CLIPTokenizer

    from vrforge.bench.gpu_t2i import write_tokenizer_files

    write_tokenizer_files(folder)
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=32,
                         pad_token="<|endoftext|>")


def _text_config(cls, vocab: int):
    return cls(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
               max_position_embeddings=32, bos_token_id=0, eos_token_id=1, pad_token_id=1)


def _vision_config(cls, image: int = 64):
    return cls(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=image,
               patch_size=16)


def build_clip(folder: Path) -> Path:
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTextConfig, CLIPVisionConfig

    tokenizer = _clip_tokenizer(folder / "tok")
    config = CLIPConfig(text_config=_text_config(CLIPTextConfig, len(tokenizer)).to_dict(),
                        vision_config=_vision_config(CLIPVisionConfig).to_dict(), projection_dim=16)
    torch.manual_seed(0)
    CLIPModel(config).save_pretrained(folder)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64})
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def build_dino(folder: Path) -> Path:
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    torch.manual_seed(0)
    Dinov2Model(_vision_config(Dinov2Config)).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}, do_center_crop=True,
                      image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225]).save_pretrained(folder)
    return folder


def build_owlv2(folder: Path) -> Path:
    import torch
    from transformers import (
        Owlv2Config,
        Owlv2ForObjectDetection,
        Owlv2ImageProcessor,
        Owlv2Processor,
        Owlv2TextConfig,
        Owlv2VisionConfig,
    )

    tokenizer = _clip_tokenizer(folder / "tok")
    config = Owlv2Config(text_config=_text_config(Owlv2TextConfig, len(tokenizer)).to_dict(),
                         vision_config=_vision_config(Owlv2VisionConfig).to_dict(), projection_dim=32)
    torch.manual_seed(0)
    Owlv2ForObjectDetection(config).save_pretrained(folder)
    Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 64, "width": 64}), tokenizer=tokenizer).save_pretrained(folder)
    return folder


def build_sentence(folder: Path) -> Path:
    """A sentence-transformers model (BERT + mean pooling) with a word-level vocabulary, saved with save()."""
    import torch
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers 6 moved the modules; older releases keep them in .models
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # the same two classes under their old path, hence the redefinition
        from sentence_transformers.models import Pooling, Transformer  # type: ignore[no-redef]
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers import models as tok_models
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    tok = Tokenizer(tok_models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)
    base = folder / "bert"
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=64)).save_pretrained(base)
    fast.save_pretrained(base)
    transformer = Transformer(str(base), max_seq_length=64)
    pooling = Pooling(32, pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(folder / "st"))
    return folder / "st"
