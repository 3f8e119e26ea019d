"""tilefuse._C.PreparedLaunch, the warm call's packing in C++ (kernel_params.Launch.run): the Params bytes it
launches with are the template with each call's pointers, scalars and tensor maps written at their offsets;
maps are encoded once per pointer tuple (the last 32 kept). No GPU needed: pack() returns the bytes run()
launches with."""
import struct

import pytest

from tilefuse import _C
from tilefuse.kernel_params import Launch


def expected(template, writes):
    params = bytearray(template)
    for offset, fmt, value in writes:
        if fmt == "map":
            params[offset:offset + 128] = value
        else:
            struct.pack_into(fmt, params, offset, value)
    return bytes(params)


def blob(tag, pointer):
    return bytes([tag]) * 8 + pointer.to_bytes(8, "little") + bytes(112)


def make_launch(calls):
    template = bytes(range(256)) * 3  # 768 bytes, every byte distinct from zero somewhere
    launch = Launch(kernel=0, grid=4, threads=128, smem_bytes=0, template=template)
    launch.pointers += [(8, "a"), (16, "out:D"), (24, "arg:bias")]
    launch.scalars += [(40, "alpha"), (44, "beta")]

    def operands(a, b):  # two maps from two pointers, like the conv's operand maps
        calls.append((a, b))
        return blob(1, a), blob(2, b)

    launch.add_maps((128, 256), ("a", "b"), operands)
    launch.add_map(512, "arg:residual", lambda pointer: blob(3, pointer))
    return launch


def test_pack_writes_pointers_scalars_and_maps_at_their_offsets():
    calls = []
    launch = make_launch(calls)
    pointers = {"a": 0x1000, "b": 0x2000, "out:D": 0x3000, "arg:bias": 0x4000, "arg:residual": 0x5000}
    arguments = {"alpha": 0.5, "beta": -2.25}
    got = launch.native().pack(*launch.slots(pointers, arguments))
    want = expected(launch.template, [(8, "<Q", 0x1000), (16, "<Q", 0x3000), (24, "<Q", 0x4000), (40, "<f", 0.5),
                                      (44, "<f", -2.25), (128, "map", blob(1, 0x1000)), (256, "map", blob(2, 0x2000)),
                                      (512, "map", blob(3, 0x5000))])
    assert got == want


def test_maps_are_encoded_once_per_pointer_tuple_and_the_last_32_kept():
    calls = []
    launch = make_launch(calls)
    native = launch.native()
    base = {"out:D": 1, "arg:bias": 2, "arg:residual": 3}
    for _ in range(3):
        native.pack(*launch.slots({**base, "a": 16, "b": 32}, {"alpha": 1.0, "beta": 1.0}))
    assert calls == [(16, 32)]
    for i in range(33):  # 33 new pairs: the first (16, 32) falls out
        native.pack(*launch.slots({**base, "a": 64 * (i + 1), "b": 32}, {"alpha": 1.0, "beta": 1.0}))
    native.pack(*launch.slots({**base, "a": 16, "b": 32}, {"alpha": 1.0, "beta": 1.0}))
    assert len(calls) == 35 and calls[-1] == (16, 32)


def test_bad_layouts_and_encoders_raise():
    with pytest.raises(ValueError, match="past the 64-byte Params"):
        _C.PreparedLaunch(0, 1, 32, 1, 0, 1, bytes(64)).add_pointer(60, 0)
    short = _C.PreparedLaunch(0, 1, 32, 1, 0, 1, bytes(256))
    short.add_maps([0], [0], lambda p: (bytes(64),))
    with pytest.raises(ValueError, match="other than 128 bytes"):
        short.pack([8], [])
    few = _C.PreparedLaunch(0, 1, 32, 1, 0, 1, bytes(256))
    few.add_maps([0, 128], [0], lambda p: (bytes(128),))
    with pytest.raises(ValueError, match="returned 1 maps for 2 offsets"):
        few.pack([8], [])
    with pytest.raises(ValueError, match="pointer slot 3 of 1"):
        bad = _C.PreparedLaunch(0, 1, 32, 1, 0, 1, bytes(64))
        bad.add_pointer(0, 3)
        bad.pack([8], [])
    failing = _C.PreparedLaunch(0, 1, 32, 1, 0, 1, bytes(256))
    failing.add_maps([0], [0], lambda p: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.pack([8], [])


def test_the_early_launch_reaches_the_native_launch_only_where_asked():
    # Only a kernel that waits for its predecessor itself (the Hopper kernel) may start beside it.
    assert make_launch([]).native().after_previous_early is False
    template = bytes(64)
    early = Launch(kernel=0, grid=1, threads=128, smem_bytes=0, after_previous_early=True, template=template)
    assert early.native().after_previous_early is True
