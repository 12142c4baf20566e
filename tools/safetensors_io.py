"""Minimal safetensors reader/writer in plain Python + numpy, because Debian has no
python3-safetensors. Same format as the Python library: 8-byte little-endian header length,
JSON header, raw little-endian tensor bytes. Writes F32; reads F32 and BF16 (as `gpt export`
writes it), BF16 widened to float32 exactly, as torch's bfloat16 .float() does."""
import json
import struct

import numpy as np


def save(path, tensors, metadata=None):
    header, offset, blobs = {}, 0, []
    if metadata:
        header['__metadata__'] = {k: str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype='<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(np.shape(array)), 'data_offsets': [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(',', ':'))
    text += ' ' * ((8 - len(text) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text.encode())
        for blob in blobs:
            f.write(blob)


def load(path):
    with open(path, 'rb') as f:
        raw = f.read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop('__metadata__', {})
    tensors = {}
    for name, info in header.items():
        assert info['dtype'] in ('F32', 'BF16'), name
        begin, end = info['data_offsets']
        data = raw[8 + n + begin:8 + n + end]
        if info['dtype'] == 'BF16':
            array = (np.frombuffer(data, dtype='<u2').astype('<u4') << 16).view('<f4')
        else:
            array = np.frombuffer(data, dtype='<f4')
        tensors[name] = array.reshape(info['shape']).copy()
    return tensors, metadata
