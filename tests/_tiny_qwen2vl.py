"""A tiny Qwen2-VL with random weights, built offline for tests: a 1-layer vision encoder with its patch merger
(the projector), a 2-layer Qwen2 language model and a word-level tokenizer trained on the given texts. The image
processor is the PIL one (``Qwen2VLImageProcessorPil``), so nothing needs torchvision."""

from __future__ import annotations

from collections.abc import Iterable

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {% for c in m['content'] %}"
                 "{% if c['type'] == 'image' %}<|vision_start|> <|image_pad|> <|vision_end|> {% else %}{{ c['text'] }} {% endif %}"
                 "{% endfor %}{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}")
SPECIAL = ["<unk>", "<s>", "</s>", "<pad>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|video_pad|>"]


def build_tiny_qwen2vl(corpus: Iterable[str], layers: int = 2):
    """(processor, model in eval mode) in memory; the weights are seeded. Not saved: AutoProcessor cannot load a
    Qwen2-VL folder without torchvision (it wants the video processor), so tests use the objects."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessorPil,
    )

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.train_from_iterator(list(corpus), trainers.WordLevelTrainer(special_tokens=SPECIAL))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>",
                                   extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                                                         "vision_start_token": "<|vision_start|>",
                                                         "vision_end_token": "<|vision_end|>"})
    # Pictures scaled to 56-112 px in 14 px patches, merged 2 x 2: 4 to 16 visual tokens, by picture size.
    image_processor = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=112 * 112, patch_size=14, merge_size=2,
                                               temporal_patch_size=2)
    processor = tiny_qwen2vl_processor(image_processor, fast)
    ids = {name: fast.convert_tokens_to_ids(name) for name in SPECIAL}
    config = Qwen2VLConfig(
        text_config={"vocab_size": len(fast), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": layers,
                     "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 512,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]},
                     "bos_token_id": ids["<s>"], "eos_token_id": ids["</s>"], "pad_token_id": ids["<pad>"]},
        vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2, "patch_size": 14,
                       "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(0)
    return processor, Qwen2VLForConditionalGeneration(config).eval()


def tiny_qwen2vl_processor(image_processor, tokenizer):
    """A Qwen2VLProcessor without a video processor: the real one needs torchvision, and images never use it."""
    from transformers import Qwen2VLProcessor
    from transformers.processing_utils import ProcessorMixin

    check = ProcessorMixin.check_argument_for_proper_class
    ProcessorMixin.check_argument_for_proper_class = lambda self, name, arg: None if arg is None else check(self, name, arg)
    try:
        return Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                                chat_template=CHAT_TEMPLATE)
    finally:
        ProcessorMixin.check_argument_for_proper_class = check
