"""Text-to-image throughput: vrforge's runner against a plain diffusers loop, in one run.

Builds a realistically sized Stable Diffusion pipeline from configs written here, with random
weights (nothing is downloaded): SDXL-sized (2.6 B-parameter UNet, CLIP-L and bigG text
encoders) at 1024 px, or SD1.5-sized at 512 px; ``--tiny`` keeps the structure with widths of
a few dozen channels, for a CPU smoke test. Over the same N prompts it then times

- the plain loop: ``pipe(prompt=batch, generator=one generator per batch)`` and ``image.save``;
- the runner (``vrforge.runners.diffusion.run``): per-item CPU generators, resume checks,
  atomic PNG writes in background threads, the run manifest.

Loading is not timed (both use the same pipeline object); one untimed batch warms up first.

    python -m vrforge.bench.gpu_t2i --prompts 300            # on a GPU: SDXL-sized, 1024 px, bf16
    python -m vrforge.bench.gpu_t2i --tiny --prompts 2       # CPU smoke test

writes bench/results/gpu_t2i.json (``--tiny``: gpu_t2i-tiny.json). Target: runner images/s
>= 0.90 x the plain loop's.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 0.90
ARCHS = ("sdxl", "sd15")
DEFAULT_SIZE = {"sdxl": 1024, "sd15": 512}
TINY_SIZE = 64


def write_tokenizer_files(folder: Path) -> Path:
    """A CLIP tokenizer vocabulary by hand: specials, letters and digits (each alone and word-final), no merges."""
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for char in "abcdefghijklmnopqrstuvwxyz0123456789":
        vocab[char] = len(vocab)
        vocab[char + "</w>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return folder


def _tokenizer(folder: Path):
    from transformers import CLIPTokenizer

    write_tokenizer_files(folder)
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77)


def _clip_config(hidden: int, layers: int, heads: int, intermediate: int, projection: int, act: str, vocab: int = 49408):
    from transformers import CLIPTextConfig

    return CLIPTextConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
                          num_attention_heads=heads, max_position_embeddings=77, projection_dim=projection,
                          hidden_act=act, bos_token_id=0, eos_token_id=1, pad_token_id=1)


def _vae(tiny: bool, scaling: float):
    from diffusers import AutoencoderKL

    if tiny:
        return AutoencoderKL(block_out_channels=(16, 32), scaling_factor=scaling, down_block_types=("DownEncoderBlock2D",) * 2,
                             up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=8, sample_size=64)
    return AutoencoderKL(block_out_channels=(128, 256, 512, 512), down_block_types=("DownEncoderBlock2D",) * 4,
                         up_block_types=("UpDecoderBlock2D",) * 4, latent_channels=4, layers_per_block=2,
                         sample_size=1024, scaling_factor=scaling, force_upcast=False)


# UNet configs: the published SDXL-base and SD1.5 shapes, and tiny ones of the same structure.
UNETS = {
    ("sdxl", False): {
        "sample_size": 128, "layers_per_block": 2, "block_out_channels": (320, 640, 1280),
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
        "up_block_types": ("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
        "attention_head_dim": (5, 10, 20), "transformer_layers_per_block": (1, 2, 10), "cross_attention_dim": 2048,
        "use_linear_projection": True, "addition_embed_type": "text_time", "addition_time_embed_dim": 256,
        "projection_class_embeddings_input_dim": 2816},  # 1280 pooled text + 6 time ids x 256
    ("sdxl", True): {
        "sample_size": 8, "layers_per_block": 1, "block_out_channels": (32, 64), "norm_num_groups": 8,
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"), "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
        "attention_head_dim": (2, 4), "transformer_layers_per_block": (1, 2), "cross_attention_dim": 64,
        "use_linear_projection": True, "addition_embed_type": "text_time", "addition_time_embed_dim": 8,
        "projection_class_embeddings_input_dim": 80},  # 32 pooled text + 6 time ids x 8
    ("sd15", False): {
        "sample_size": 64, "layers_per_block": 2, "block_out_channels": (320, 640, 1280, 1280),
        "down_block_types": ("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
        "up_block_types": ("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3, "cross_attention_dim": 768, "attention_head_dim": 8},
    ("sd15", True): {
        "sample_size": 8, "layers_per_block": 1, "block_out_channels": (32, 64), "norm_num_groups": 8,
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"), "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
        "cross_attention_dim": 32, "attention_head_dim": 8},
}


def build_pipeline(arch: str, work_dir: Path, device: str = "cpu", dtype=None, seed: int = 0, tiny: bool = False):
    """A Stable Diffusion pipeline (``sdxl`` or ``sd15``) with random weights, built on ``device``;
    ``tiny`` keeps the structure with widths of a few dozen channels (CPU tests)."""
    import torch
    from diffusers import (
        DDIMScheduler,
        EulerDiscreteScheduler,
        StableDiffusionPipeline,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextModel, CLIPTextModelWithProjection

    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r} (choose from {', '.join(ARCHS)})")
    torch.manual_seed(seed)  # weights only; generation uses per-item generators
    betas = {"beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear"}
    clip_l = _clip_config(32, 2, 4, 37, 32, "quick_gelu", vocab=128) if tiny else _clip_config(768, 12, 12, 3072, 768, "quick_gelu")
    clip_g = _clip_config(32, 2, 4, 37, 32, "gelu", vocab=128) if tiny else _clip_config(1280, 32, 20, 5120, 1280, "gelu")
    # Only the weights are created on the device (fast random init of billions of parameters on a
    # GPU); schedulers compute their tables with numpy and must stay on the CPU.
    with torch.device(device):
        unet = UNet2DConditionModel(**UNETS[arch, tiny])
        vae = _vae(tiny, 0.13025 if arch == "sdxl" else 0.18215)
        text_encoder = CLIPTextModel(clip_l)
        text_encoder_2 = CLIPTextModelWithProjection(clip_g) if arch == "sdxl" else None
    pipe: Any
    if arch == "sdxl":
        pipe = StableDiffusionXLPipeline(
            vae=vae, text_encoder=text_encoder, text_encoder_2=text_encoder_2,
            tokenizer=_tokenizer(work_dir / "tokenizer"), tokenizer_2=_tokenizer(work_dir / "tokenizer_2"),
            unet=unet, scheduler=EulerDiscreteScheduler(**betas, steps_offset=1, timestep_spacing="leading"))
    else:
        pipe = StableDiffusionPipeline(
            vae=vae, text_encoder=text_encoder, tokenizer=_tokenizer(work_dir / "tokenizer"),
            unet=unet, scheduler=DDIMScheduler(**betas, clip_sample=False, set_alpha_to_one=False, steps_offset=1),
            safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    if dtype is not None and dtype != torch.float32:
        pipe = pipe.to(dtype=dtype)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def bench_prompts(count: int) -> list[str]:
    subjects = ("a glass of water", "a red apple", "a paper boat", "a street lamp", "a cat on a wall", "a mountain lake")
    settings = ("at dawn", "in heavy rain", "under a microscope", "on the moon", "in a desert", "in winter")
    return [f"{subjects[i % len(subjects)]} {settings[(i // len(subjects)) % len(settings)]} {i}" for i in range(count)]


def _plain_loop(pipe, prompts: list[str], out: Path, call: dict[str, Any], batch_size: int, device: str) -> float:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for start in range(0, len(prompts), batch_size):
        generator = torch.Generator(device).manual_seed(start)
        images = pipe(prompt=prompts[start:start + batch_size], generator=generator, **call).images
        for k, image in enumerate(images):
            image.save(out / f"{start + k:05d}.png")
    _synchronize(device)
    return time.perf_counter() - started


def _synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_bench(arch: str, prompts: int, size: int, steps: int, batch_size: int, guidance: float, work: Path,
              dtype_name: str = "auto", tiny: bool = False) -> dict[str, Any]:
    import torch

    from vrforge.runners.diffusion import CallSettings, ModelSpec, RunConfig, package_versions, resolve_dtype, run
    from vrforge.runners.diffusion import dtype_name as name_of
    from vrforge.runners.items import GenerationItem

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = resolve_dtype(dtype_name, device)
    t0 = time.perf_counter()
    pipe = build_pipeline(arch, work / "model", device=device, dtype=dtype, tiny=tiny)
    build_seconds = time.perf_counter() - t0
    texts = bench_prompts(prompts)
    call = {"num_inference_steps": steps, "guidance_scale": guidance, "height": size, "width": size}

    pipe(prompt=texts[:batch_size], generator=torch.Generator(device).manual_seed(0), **call)  # warm-up, untimed
    _synchronize(device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()

    plain_seconds = _plain_loop(pipe, texts, work / "plain", call, batch_size, device)

    items = [GenerationItem(id=f"bench-{i:05d}", prompt=text, output=f"{i:05d}.png") for i, text in enumerate(texts)]
    config = RunConfig(kind="t2i", spec=ModelSpec(model=f"random-{arch}"), out=work / "runner", dtype=dtype_name,
                       settings=CallSettings(steps=steps, guidance=guidance, width=size, height=size),
                       batch_size=batch_size, progress=False, inputs={"bench": "gpu_t2i"})
    model_info = {"id": f"random-{arch}", "source": "memory", "revision": None, "variant": None,
                  "pipeline_class": type(pipe).__name__}
    started = time.perf_counter()
    manifest = run(config, items, pipe=pipe, model_info=model_info)
    _synchronize(device)
    runner_seconds = time.perf_counter() - started
    written = sum(1 for _ in (work / "runner").glob("*.png"))

    runner_rate, plain_rate = prompts / runner_seconds, prompts / plain_seconds
    return {
        "arch": arch, "tiny": tiny, "device": device,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "dtype": name_of(dtype), "prompts": prompts, "size": size, "steps": steps, "guidance": guidance,
        "batch_size": batch_size,
        "parameters": {name: sum(p.numel() for p in getattr(pipe, name).parameters())
                       for name in ("unet", "vae", "text_encoder", "text_encoder_2") if getattr(pipe, name, None) is not None},
        "build_seconds": round(build_seconds, 2),
        "plain": {"seconds": round(plain_seconds, 3), "images_per_second": round(plain_rate, 4)},
        "runner": {"seconds": round(runner_seconds, 3), "images_per_second": round(runner_rate, 4), "images_written": written,
                   "manifest_items": len(manifest.get("items", []))},
        "ratio": round(runner_rate / plain_rate, 4),
        "target_ratio": TARGET_RATIO,
        "meets_target": runner_rate / plain_rate >= TARGET_RATIO,
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None,
        "versions": package_versions(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=300)
    parser.add_argument("--arch", choices=ARCHS, default="sdxl")
    parser.add_argument("--tiny", action="store_true", help="the same structure with tiny widths, 64 px, 2 steps (CPU smoke test)")
    parser.add_argument("--size", type=int, help="image side (default: 1024 sdxl, 512 sd15, 64 with --tiny)")
    parser.add_argument("--steps", type=int, help="denoising steps (default 4; 2 with --tiny)")
    parser.add_argument("--guidance", type=float, default=5.0)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--dtype", default="auto", help="auto (bf16 on CUDA), bf16, fp16, fp32")
    parser.add_argument("--work", help="folder for the images (default: a temporary folder)")
    parser.add_argument("--results", help="result file (default bench/results/gpu_t2i.json, --tiny: gpu_t2i-tiny.json)")
    args = parser.parse_args(argv)
    arch = args.arch
    size = args.size or (TINY_SIZE if args.tiny else DEFAULT_SIZE[arch])
    steps = args.steps or (2 if args.tiny else 4)
    results = Path(args.results or f"bench/results/gpu_t2i{'-tiny' if args.tiny else ''}.json")
    if args.prompts < 1 or args.batch_size < 1:
        parser.error("--prompts and --batch-size must be at least 1")
    with tempfile.TemporaryDirectory(prefix="gpu_t2i-") as scratch:
        work = Path(args.work) if args.work else Path(scratch)
        report = run_bench(arch, args.prompts, size, steps, args.batch_size, args.guidance, work, args.dtype, tiny=args.tiny)
    from vrforge.runners.diffusion import write_json_atomic

    write_json_atomic(results, report)
    where = report["gpu"] or report["device"]
    print(f"{arch}{' (tiny)' if args.tiny else ''} {size} px, {steps} steps, batch {args.batch_size}, {report['dtype']} on {where}: "
          f"runner {report['runner']['images_per_second']:.3f} images/s, plain {report['plain']['images_per_second']:.3f} "
          f"images/s, ratio {report['ratio']:.3f} (target >= {TARGET_RATIO}); wrote {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
