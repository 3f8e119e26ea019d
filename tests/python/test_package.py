"""The installed package: the compiled module loads without a GPU and agrees with the C++ library."""
import os
import re

import tilefuse
from tilefuse import _C

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_version_matches_the_cmake_project():
    text = open(os.path.join(REPO, "CMakeLists.txt")).read()
    version = re.search(r"project\(tilefuse VERSION ([0-9.]+)", text).group(1)
    assert tilefuse.__version__ == _C.__version__ == version


def test_device_count_is_a_count_and_zero_without_a_gpu():
    count = tilefuse.cuda_device_count()
    assert isinstance(count, int) and count >= 0
    if not os.path.exists("/dev/nvidiactl"):
        assert count == 0


def test_element_types_match_the_cpp_library():
    assert list(tilefuse.ELEMENT_TYPES) == _C.element_types()


def test_element_type_names():
    assert tilefuse.element_type("bf16").cpp == "tilefuse::bfloat16_t"
    assert tilefuse.element_type("bfloat16_t").name == "bfloat16"
    assert tilefuse.element_type("torch.float16").name == "float16"
    assert tilefuse.element_type("tilefuse::float_e4m3_t").name == "float8_e4m3"


def test_unknown_element_type_names_the_argument():
    try:
        tilefuse.element_type("complex64", what="element")
    except ValueError as error:
        assert "element='complex64'" in str(error) and "bfloat16" in str(error)
    else:
        raise AssertionError("complex64 was accepted")
