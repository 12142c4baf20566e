"""Which kernels a peer process runs, so that a benchmark's output says how its peer ran:
openblas_core() is the OpenBLAS kernel family (openblas_get_corename of whichever loaded library
exports it: libopenblas, or the libblas.so.3 PyTorch links when OpenBLAS provides it; import after
torch); torch_kernels() adds PyTorch's ATen and oneDNN instruction sets and the cap variables this
process sees; native_bfloat16() says whether the CPU, under those caps, multiplies bfloat16."""
import ctypes
import os

# The variables that cap a peer's kernels (tools/bench_vs_torch.py --max_isa sets or clears them).
CAP_VARIABLES = ('OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE', 'ATEN_CPU_CAPABILITY', 'ONEDNN_MAX_CPU_ISA',
                 'DNNL_MAX_CPU_ISA')
# oneDNN's levels below AVX512_CORE_BF16: bfloat16 products there are emulated (and slow).
ONEDNN_BELOW_BF16 = {'SSE41', 'AVX', 'AVX2', 'AVX2_VNNI', 'AVX2_VNNI_2', 'AVX512_CORE', 'AVX512_CORE_VNNI'}


def openblas_core():
    with open('/proc/self/maps') as maps:
        paths = sorted({fields[5] for fields in (line.split() for line in maps)
                        if len(fields) >= 6 and 'blas' in fields[5]})
    for path in paths:
        try:
            corename = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        return corename().decode()
    return 'no OpenBLAS loaded'


def onednn_isa(torch):
    """The instruction set oneDNN says it runs (its verbose 'isa' line, printed on the first
    primitive: a tiny reorder into its layout), or None when it prints none."""
    import tempfile
    with tempfile.TemporaryFile() as out:
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                torch.ones(4, 4).to_mkldnn()
        except (AttributeError, RuntimeError):
            pass
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        lines = out.read().decode(errors='replace').splitlines()
    return next((line.split('isa:', 1)[1].strip() for line in lines if ',isa:' in line), None)


def torch_kernels(torch):
    """ATen's vector kernels (get_cpu_capability), oneDNN's instruction set, OpenBLAS's family, and
    the cap variables as this process sees them (None: unset)."""
    cpu = getattr(torch.backends, 'cpu', None)
    return dict(aten=cpu.get_cpu_capability() if cpu else 'unknown (torch without torch.backends.cpu)',
                onednn=onednn_isa(torch) or 'no oneDNN verbose line', openblas=openblas_core(),
                env={name: os.environ.get(name) for name in CAP_VARIABLES})


def native_bfloat16():
    """Whether bfloat16 products run natively (x86: AVX512_BF16 or AMX; aarch64: BF16) under this
    process's oneDNN cap."""
    with open('/proc/cpuinfo') as cpuinfo:
        flags = next((line.split(':', 1)[1].split() for line in cpuinfo if line.startswith(('flags', 'Features'))),
                     [])
    cap = (os.environ.get('ONEDNN_MAX_CPU_ISA') or os.environ.get('DNNL_MAX_CPU_ISA') or '').upper()
    return bool({'avx512_bf16', 'amx_bf16', 'bf16'} & set(flags)) and cap not in ONEDNN_BELOW_BF16
