"""Writes the reference dequantizations of the `gguf` PyPI package (its numpy
dequantizers) for the Rust test `quant::tests::dequantize_equals_gguf_numpy`.

For every type it supports, the input is the committed golden blocks of
tests/goldens/quant/<type>.bin (real quantizer output: zero, huge, tiny,
subnormal scales) followed by 64 blocks of seeded random bytes (any scale bits,
including infinities and NaNs). Writes <out>/<type>.q (the blocks) and
<out>/<type>.f32 (numpy's values, little-endian f32).

usage: gguf_dequant.py GOLDEN_DIR OUT_DIR
"""
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

TYPES = ["f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K",
         "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0",
         "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m"]


def main() -> None:
    golden, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    np.seterr(all="ignore")  # random scale bits make inf * 0 = NaN on purpose
    rng = np.random.default_rng(20261129)
    done = []
    for name in TYPES:
        qt = T[name.upper()]
        block_size, type_size = GGML_QUANT_SIZES[qt]
        with open(os.path.join(golden, name + ".bin"), "rb") as f:
            data = f.read()
        data += rng.integers(0, 256, size=64 * type_size, dtype=np.uint8).tobytes()
        raw = np.frombuffer(data, dtype=np.uint8)
        vals = dequantize(raw, qt)
        vals = np.asarray(vals, dtype=np.float32).reshape(-1)
        assert vals.size == len(data) // type_size * block_size, name
        with open(os.path.join(out, name + ".q"), "wb") as f:
            f.write(data)
        with open(os.path.join(out, name + ".f32"), "wb") as f:
            f.write(vals.astype("<f4").tobytes())
        done.append(name)
    print(f"gguf_dequant.py: wrote {len(done)} types: {' '.join(done)}")


if __name__ == "__main__":
    main()
