"""tilefuse._C.StreamProgram on one GPU: a program's wait holds its stream until another program's write reaches
the epoch, then its copy runs and its event orders the caller's stream; epoch-relative values; the checks made
when a program is recorded. (The signalled schedules that use it run in test_parallel_gpu.py.)"""
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from tilefuse import _C  # noqa: E402


def test_a_wait_holds_its_copy_until_the_write_reaches_the_epoch():
    words = torch.zeros(4, dtype=torch.int32, device="cuda")
    source = torch.arange(1024, dtype=torch.float32, device="cuda")
    target = torch.full((1024,), float("nan"), device="cuda")
    events = _C.StreamEvents(2)
    waiter, writer = torch.cuda.Stream(), torch.cuda.Stream()
    flag = words.data_ptr()
    copy = _C.StreamProgram(events, [
        ("wait", waiter.cuda_stream, flag, 0, 1),  # until words[0] >= epoch
        ("copy", waiter.cuda_stream, target.data_ptr(), 4096, 0),
        ("record", waiter.cuda_stream, 0, 0, 0),
        ("wait_event", 0, 0, 0, 0)])  # the caller's stream waits for the copy
    signal = _C.StreamProgram(events, [("write", 0, flag, 0, 1), ("write", 0, flag + 4, -1, 1)])
    assert len(copy) == 4 and len(signal) == 2 and len(events) == 2
    torch.cuda.synchronize()
    copy.run(torch.cuda.current_stream().cuda_stream, 7, source.data_ptr())
    time.sleep(0.05)
    assert not waiter.query(), "the wait did not hold its stream"  # (no sync here: it would wait forever)
    signal.run(writer.cuda_stream, 7)
    torch.cuda.current_stream().synchronize()  # waits for the copy through the event
    assert torch.equal(target, source)
    assert words.tolist()[:2] == [7, 6]


def test_values_must_fit_32_bits():
    with pytest.raises(ValueError, match="fit 32 bits"):
        _C.StreamProgram(_C.StreamEvents(0), [("write", 0, 16, 1 << 32, 0)])


def test_values_wrap_around_32_bits():
    words = torch.zeros(2, dtype=torch.int32, device="cuda")
    events = _C.StreamEvents(0)
    program = _C.StreamProgram(events, [("write", 0, words.data_ptr(), -1, 1),
                                        ("write", 0, words.data_ptr() + 4, 5, 0)])
    program.run(torch.cuda.current_stream().cuda_stream, 0)
    torch.cuda.synchronize()
    assert words.view(torch.uint32).tolist() == [0xFFFFFFFF, 5]


@pytest.mark.parametrize("op, match", [
    (("jump", 0, 16, 0, 0), "unknown operation 'jump'"),
    (("write", 0, 0, 1, 0), "non-null, 4-byte aligned"),
    (("wait", 0, 18, 1, 0), "non-null, 4-byte aligned"),
    (("write", 0, 16, 1, 2), "c is 1"),
    (("copy", 0, 16, 0, 0), "bytes > 0"),
    (("record", 0, 3, 0, 0), "event 3 of a pool of 2"),
])
def test_bad_operations_are_refused_when_recorded(op, match):
    with pytest.raises((ValueError, IndexError), match=match):
        _C.StreamProgram(_C.StreamEvents(2), [op])


def test_a_copy_needs_its_source_before_anything_is_enqueued():
    target, words = torch.zeros(4, device="cuda"), torch.zeros(1, dtype=torch.int32, device="cuda")
    program = _C.StreamProgram(_C.StreamEvents(0), [("write", 0, words.data_ptr(), 9, 0),
                                                    ("copy", 0, target.data_ptr(), 16, 0)])
    with pytest.raises(ValueError, match="source pointer"):
        program.run(torch.cuda.current_stream().cuda_stream, 1)
    torch.cuda.synchronize()
    assert words.item() == 0  # the write before the copy was not enqueued either


def test_a_program_runs_only_on_its_events_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    words = torch.zeros(1, dtype=torch.int32, device="cuda:0")
    with torch.cuda.device(0):
        program = _C.StreamProgram(_C.StreamEvents(1), [("record", 0, 0, 0, 0), ("write", 0, words.data_ptr(), 1, 0)])
    with torch.cuda.device(1):
        with pytest.raises(ValueError, match="on device 1, but its events and streams are device 0's"):
            program.run(torch.cuda.current_stream().cuda_stream, 1)
