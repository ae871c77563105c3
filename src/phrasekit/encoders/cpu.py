"""What the CPU is: its model name and feature flags, for speed choices made at run time (bf16
where it is native, the runtime measured fastest per CPU).

Read from Linux's ``/proc/cpuinfo`` (x86 ``flags``, ARM ``Features``) and from macOS's
``sysctl`` (``machdep.cpu.*`` on Intel Macs, ``hw.optional.*`` on both). Flags are lower case
and named as Linux names them (``avx512_bf16``, ``amx_bf16``; ARM ``asimd``, ``bf16``,
``i8mm``, ``sve``), whatever the system.
"""

from __future__ import annotations

import functools
import logging
import platform
import subprocess
from pathlib import Path

#: Precisions settled per CPU. ``auto``: bf16 where native, else fp32; int8 (8-bit weights)
#: instead where the CPU has native int8 dot products and int8 measures faster. ``fast``: the
#: same, but int8 also on CPUs without them (7-bit weights), for rankings that 7-bit vectors
#: keep: keyphrases (Inspec dev F1@10 39.32 against 39.50), not phrase similarity (avg7 -0.34).
AUTO_PRECISIONS = ("auto", "fast")

logger = logging.getLogger(__name__)

#: macOS ``hw.optional`` keys (value 1) and the Linux flag each stands for.
SYSCTL_OPTIONAL = {
    "hw.optional.neon": "asimd", "hw.optional.arm.FEAT_BF16": "bf16",
    "hw.optional.arm.FEAT_I8MM": "i8mm", "hw.optional.arm.FEAT_DotProd": "asimddp",
    "hw.optional.arm.FEAT_FP16": "fphp", "hw.optional.arm.FEAT_SME": "sme",
    "hw.optional.avx1_0": "avx", "hw.optional.avx2_0": "avx2", "hw.optional.fma": "fma",
    "hw.optional.avx512f": "avx512f", "hw.optional.avx512bw": "avx512bw",
    "hw.optional.avx512vnni": "avx512_vnni",
}
#: macOS ``machdep.cpu`` feature names that Linux spells otherwise.
SYSCTL_RENAMES = {"avx1.0": "avx", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
                  "sse4.1": "sse4_1", "sse4.2": "sse4_2"}
#: Flags that mean native bfloat16 arithmetic: x86 AVX512-BF16 or AMX; ARM's ``bf16`` counts
#: on Linux only (oneDNN's ARM kernels, e.g. Graviton 3), not on macOS, where torch has no
#: fast CPU bfloat16 kernels.
X86_BF16 = frozenset({"avx512_bf16", "amx_bf16"})


def parse_cpuinfo_flags(text: str) -> frozenset[str]:
    """The flags of a ``/proc/cpuinfo`` text: x86 ``flags`` lines and ARM ``Features`` lines."""
    return frozenset(f.lower() for line in text.splitlines()
                     if line.split(":", 1)[0].strip() in ("flags", "Features") and ":" in line
                     for f in line.split(":", 1)[1].split())


def parse_sysctl_flags(text: str) -> frozenset[str]:
    """The flags of ``sysctl machdep.cpu.features machdep.cpu.leaf7_features hw.optional``
    output (``name: value`` lines) on macOS."""
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("machdep.cpu.features", "machdep.cpu.leaf7_features",
                   "machdep.cpu.extfeatures"):
            flags.update(SYSCTL_RENAMES.get(f.lower(), f.lower()) for f in value.split())
        elif key in SYSCTL_OPTIONAL and value == "1":
            flags.add(SYSCTL_OPTIONAL[key])
    return frozenset(flags)


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _sysctl(*names: str) -> str:
    """``sysctl`` output for ``names`` (empty where there is no sysctl or it fails)."""
    try:
        return subprocess.run(["sysctl", *names], capture_output=True, text=True, timeout=5,
                              check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (empty where they cannot be read); read once per process."""
    if platform.system() == "Darwin":
        return parse_sysctl_flags(_sysctl("machdep.cpu.features", "machdep.cpu.leaf7_features",
                                          "hw.optional"))
    return parse_cpuinfo_flags(_read_cpuinfo())


def native_bf16(flags: frozenset[str] | set[str], system: str | None = None) -> bool:
    """True when ``flags`` (of a CPU running ``system``, default this one) mean native
    bfloat16 arithmetic torch uses: AVX512-BF16 or AMX, or ARM's ``bf16`` on Linux."""
    system = platform.system() if system is None else system
    return bool(X86_BF16 & flags) or ("bf16" in flags and system == "Linux")


def native_int8_dot(flags: frozenset[str] | set[str]) -> bool:
    """True when int8 products cannot saturate: x86 VNNI or AMX, or any ARM CPU (``asimd``),
    whose int8 kernels do not use the saturating x86 instruction."""
    return bool({"avx512_vnni", "avx_vnni", "amx_int8", "asimd"} & flags)


def weighs_int8_over_bf16(flags: frozenset[str] | set[str], system: str | None = None) -> bool:
    """True where ``precision="auto"`` and ``"fast"`` time int8 against bf16: native bfloat16
    and native int8 dot products (AVX512-BF16 with VNNI, AMX, ARM's bf16 on Linux)."""
    return native_bf16(flags, system) and native_int8_dot(flags)


def parse_cpu_model(text: str) -> str:
    """The model of a ``/proc/cpuinfo`` text: ``model name``, else ARM's implementer and part
    (``ARM 0x41 part 0xd40``), else ``unknown CPU``."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    if fields.get("model name"):
        return fields["model name"]
    if "CPU implementer" in fields:
        return f"ARM {fields['CPU implementer']} part {fields.get('CPU part', '?')}"
    return "unknown CPU"


@functools.cache
def cpu_model() -> str:
    """The CPU's model name (``unknown CPU`` where it cannot be read)."""
    if platform.system() == "Darwin":
        return _sysctl("-n", "machdep.cpu.brand_string").strip() or "unknown CPU"
    return parse_cpu_model(_read_cpuinfo())


#: The flags that decide phrasekit's arithmetic, in the order they are shown.
DECISIVE_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16",
                  "amx_int8", "asimd", "asimddp", "i8mm", "bf16")


def shown_flags(flags: frozenset[str] | set[str]) -> list[str]:
    """The decisive flags among ``flags``, in ``DECISIVE_FLAGS`` order."""
    return [f for f in DECISIVE_FLAGS if f in flags]


def precision_summary(flags: frozenset[str] | set[str] | None = None,
                      system: str | None = None) -> list[str]:
    """What ``precision="auto"`` and ``"fast"`` take on a CPU with ``flags`` (default: this
    one), as ``phrasekit models`` prints it: the choices the flags settle, and those timed
    once on first use."""
    flags = cpu_flags() if flags is None else flags
    if native_bf16(flags, system):
        auto = fast = ("int8 or bf16, whichever is timed faster on first use"
                       if weighs_int8_over_bf16(flags, system) else "bf16")
    elif native_int8_dot(flags):
        auto = fast = "int8 (8-bit weights) where timed faster on first use, else fp32"
    else:
        auto = "fp32 on torch or ONNX Runtime, whichever is timed faster on first use"
        fast = "int8 (7-bit weights) where timed faster than that"
    return [f"# this CPU: {cpu_model()} ({', '.join(shown_flags(flags)) or 'no flags read'})",
            f"#   precision auto: {auto}", f"#   precision fast: {fast}"]
