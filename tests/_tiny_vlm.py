"""A tiny LLaVA with random weights, built offline for tests: a 1-layer CLIP vision tower, a 1-layer Llama
and a word-level tokenizer trained on the given texts (words outside them read as ``<unk>``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
                 "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}"
                 "{% if add_generation_prompt %}ASSISTANT: {% endif %}")


def build_tiny_llava(folder: Path, corpus: Iterable[str], chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """Save processor and model into ``folder`` (loadable with ``local_files_only``); the weights are seeded."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.train_from_iterator(list(corpus),
                                  trainers.WordLevelTrainer(special_tokens=["<unk>", "<s>", "</s>", "<pad>", "<image>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", extra_special_tokens={"image_token": "<image>"})
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=fast, patch_size=8, num_additional_image_tokens=1,
                               vision_feature_select_strategy="default", chat_template=chat_template)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                       image_size=32, patch_size=8),
        text_config=LlamaConfig(vocab_size=len(fast), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512),
        image_token_index=fast.convert_tokens_to_ids("<image>"), vision_feature_layer=-1)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
