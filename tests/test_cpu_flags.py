"""CPU facts from captured ``/proc/cpuinfo`` and ``sysctl`` texts (x86, ARM, macOS), and
``auto`` precision never choosing a path the CPU lacks."""

from __future__ import annotations

import pytest
import torch

from phrasekit.encoders import cpu, transformer
from phrasekit.encoders.cpu import (
    native_bf16,
    native_int8_dot,
    parse_cpu_model,
    parse_cpuinfo_flags,
    parse_sysctl_flags,
)

#: Read at import, before the suite's fixture replaces it (tests/conftest.py).
REAL_BF16_SPEED = transformer.measured_bf16_speed

SAPPHIRE_FLAGS = (
    "fpu vme sse2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 amx_bf16 amx_tile "
    "amx_int8")
GRAVITON3_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt "
    "fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs "
    "paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng")
GRAVITON2_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc "
    "dcpop asimddp ssbs")
X86_SAPPHIRE = f"""processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: {SAPPHIRE_FLAGS}
"""
X86_AVX2 = """processor\t: 0
model name\t: AMD EPYC 7R13 Processor
flags\t\t: fpu sse2 avx avx2 fma
"""
ARM_GRAVITON3 = f"""processor\t: 0
BogoMIPS\t: 2100.00
Features\t: {GRAVITON3_FEATURES}
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
"""
ARM_GRAVITON2 = f"""processor\t: 0
Features\t: {GRAVITON2_FEATURES}
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""
MAC_M2 = """hw.optional.arm.FEAT_BF16: 1
hw.optional.arm.FEAT_I8MM: 1
hw.optional.arm.FEAT_DotProd: 1
hw.optional.arm.FEAT_SME: 0
hw.optional.neon: 1
hw.optional.floatingpoint: 1
"""
MAC_M1 = """hw.optional.arm.FEAT_BF16: 0
hw.optional.arm.FEAT_I8MM: 0
hw.optional.arm.FEAT_DotProd: 1
hw.optional.neon: 1
"""
MAC_INTEL = """machdep.cpu.features: FPU VME SSE2 SSE4.1 SSE4.2 AVX1.0 FMA
machdep.cpu.leaf7_features: AVX2 BMI2 AVX512F AVX512BW AVX512VNNI
hw.optional.avx2_0: 1
hw.optional.avx512f: 1
"""


def test_x86_flags_and_model():
    flags = parse_cpuinfo_flags(X86_SAPPHIRE)
    assert {"avx2", "avx512_bf16", "amx_bf16", "amx_int8"} <= flags
    assert native_bf16(flags, "Linux") and native_int8_dot(flags)
    assert parse_cpu_model(X86_SAPPHIRE) == "Intel(R) Xeon(R) Platinum 8480+"
    avx2 = parse_cpuinfo_flags(X86_AVX2)
    assert not native_bf16(avx2, "Linux") and not native_int8_dot(avx2)


def test_arm_features_and_model():
    g3 = parse_cpuinfo_flags(ARM_GRAVITON3)
    assert {"asimd", "sve", "bf16", "i8mm", "asimddp"} <= g3
    assert native_bf16(g3, "Linux") and native_int8_dot(g3)
    g2 = parse_cpuinfo_flags(ARM_GRAVITON2)
    assert "asimd" in g2 and not native_bf16(g2, "Linux")
    assert parse_cpu_model(ARM_GRAVITON3) == "ARM 0x41 part 0xd40"
    assert parse_cpu_model("") == "unknown CPU"


def test_macos_sysctl_flags():
    m2 = parse_sysctl_flags(MAC_M2)
    assert m2 == {"bf16", "i8mm", "asimddp", "asimd"}  # FEAT_SME: 0 is not a flag
    assert not native_bf16(m2, "Darwin")  # no fast torch CPU bf16 kernels on macOS
    assert native_int8_dot(m2)
    assert parse_sysctl_flags(MAC_M1) == {"asimddp", "asimd"}
    intel = parse_sysctl_flags(MAC_INTEL)
    assert {"avx", "avx2", "fma", "avx512f", "avx512_vnni", "sse4_1"} <= intel
    assert not native_bf16(intel, "Darwin")


@pytest.mark.parametrize("text", [X86_SAPPHIRE, X86_AVX2, ARM_GRAVITON3, ARM_GRAVITON2, ""])
def test_auto_precision_follows_the_flags_and_never_picks_int8(monkeypatch, text):
    flags = parse_cpuinfo_flags(text)
    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: flags)
    monkeypatch.setattr(cpu.platform, "system", lambda: "Linux")
    try:
        want = "bf16" if text in (X86_SAPPHIRE, ARM_GRAVITON3) else "fp32"
        assert transformer.resolve_precision("auto") == want
    finally:
        transformer._auto_precision.cache_clear()


@pytest.mark.parametrize(("bf16_x", "want"), [(0.73, "fp32"), (1.0, "bf16"), (1.9, "bf16"),
                                             (None, "bf16")])
def test_auto_precision_skips_bf16_measured_slower_than_fp32(monkeypatch, bf16_x, want):
    """A CPU with bf16 instructions that runs them slower than fp32 (an Intel Xeon with
    AVX512-BF16 measured 0.73x) gets fp32 from ``auto``; not measurable: the flags stand."""
    flags = parse_cpuinfo_flags(X86_SAPPHIRE)
    calls: list[bool] = []

    def measured(enc, root=None, int8=False, bf16=False):
        calls.append(bf16)
        assert enc.model.dtype == torch.float32 and enc.attention == "eager"
        if bf16_x is None:
            raise RuntimeError("no ONNX Runtime session")
        return {"onnx": 1.03, "bf16": bf16_x}

    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "measured_bf16_speed", REAL_BF16_SPEED)
    monkeypatch.setattr(transformer, "cpu_flags", lambda: flags)
    monkeypatch.setattr(cpu.platform, "system", lambda: "Linux")
    monkeypatch.setattr("phrasekit.encoders.onnx_graph.cpu_speedups", measured)
    monkeypatch.setattr("phrasekit.encoders.onnx_graph.stored_cpu_speedups",
                        lambda enc, root=None: None)  # nothing stored yet: MiniLM is timed
    try:
        assert transformer.resolve_precision("auto") == want
        assert transformer.resolve_precision("fast") == want and calls == [True]  # once
    finally:
        transformer._auto_precision.cache_clear()


def test_a_stored_bf16_timing_is_read_without_loading_a_model(monkeypatch):
    """Once this CPU's timing is in the speed file, ``auto`` reads it by its key alone."""
    flags = parse_cpuinfo_flags(X86_SAPPHIRE)
    keys: list[tuple[str, int]] = []

    def stored(enc, root=None):
        keys.append((enc.attention, enc.max_seq_length))
        return {"onnx": 1.0, "bf16": 0.73}

    def never(*args, **kwargs):
        raise AssertionError("timed again")

    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "measured_bf16_speed", REAL_BF16_SPEED)
    monkeypatch.setattr(transformer, "cpu_flags", lambda: flags)
    monkeypatch.setattr(cpu.platform, "system", lambda: "Linux")
    monkeypatch.setattr("phrasekit.encoders.onnx_graph.stored_cpu_speedups", stored)
    monkeypatch.setattr("phrasekit.encoders.onnx_graph.cpu_speedups", never)
    monkeypatch.setattr(transformer, "TransformerEncoder", never)
    try:
        assert transformer.resolve_precision("auto") == "fp32"
        assert keys == [("eager", transformer.MAX_SEQ_LENGTH)]
    finally:
        transformer._auto_precision.cache_clear()


@pytest.mark.parametrize("text", [MAC_M2, MAC_M1, MAC_INTEL])
def test_auto_precision_on_macos_is_fp32(monkeypatch, text):
    flags = parse_sysctl_flags(text)
    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: flags)
    monkeypatch.setattr(cpu.platform, "system", lambda: "Darwin")
    try:
        assert transformer.resolve_precision("auto") == "fp32"
    finally:
        transformer._auto_precision.cache_clear()


def test_the_readers_run_on_this_machine():
    assert isinstance(cpu.cpu_flags(), frozenset)
    assert cpu.cpu_model()


@pytest.mark.parametrize(("text", "system", "auto", "fast"), [
    (X86_SAPPHIRE, "Linux", "int8 or bf16", "int8 or bf16"),   # bf16 and AMX int8: both timed
    (ARM_GRAVITON3, "Linux", "int8 or bf16", "int8 or bf16"),  # ARM: bf16 and int8 dot products
    (X86_AVX2, "Linux", "fp32 on torch or ONNX Runtime", "int8 (7-bit weights)"),
    (MAC_M2, "Darwin", "int8 (8-bit weights)", "int8 (8-bit weights)"),  # no bf16 on macOS
])
def test_the_precision_summary_follows_the_flags(text, system, auto, fast):
    """`phrasekit models` ends with the CPU and what auto and fast take on it."""
    flags = (parse_sysctl_flags if system == "Darwin" else parse_cpuinfo_flags)(text)
    first, auto_line, fast_line = cpu.precision_summary(flags, system)
    assert first.startswith("# this CPU: ") and "no flags read" not in first
    assert auto_line.startswith(f"#   precision auto: {auto}")
    assert fast_line.startswith(f"#   precision fast: {fast}")
    assert cpu.precision_summary(frozenset(), "Linux")[0].endswith("(no flags read)")
