"""The OpenBLAS kernel family this process runs (openblas_get_corename of whichever loaded library
exports it: libopenblas, or the libblas.so.3 PyTorch links when OpenBLAS provides it), so that a
benchmark's output says how its peer ran. Import after torch."""
import ctypes


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
