"""tessera.from_dlpack on a device whose memory is the host's (cpu:0) aliases the producer's
memory (tsr_buffer_import_host): writes through either side are seen by the other, the
producer's memory outlives the producer's Python object, and views the device cannot alias
(misaligned) are copied instead."""

import gc

import numpy as np
import torch

import tessera

TWICE = """
kernel @twice(%x: buffer<f32>, %y: buffer<f32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %r = add %v, %v : f32
  store %r, %y[%i] : f32
}
"""


def test_writes_through_torch_are_read_through_tessera_and_back():
    t = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    b = tessera.from_dlpack(t, "cpu:0")
    t[2, 3] = -1.5                                   # torch writes ...
    t[7].fill_(4.0)
    got = b.numpy()                                  # ... tessera reads the same bytes
    want = np.arange(64, dtype=np.float32).reshape(8, 8)
    want[2, 3] = -1.5
    want[7] = 4.0
    assert np.array_equal(got, want)
    b.copy_from(np.full((8, 8), 0.25, dtype=np.float32))   # tessera writes ...
    assert torch.equal(t, torch.full((8, 8), 0.25))       # ... torch sees it
    assert torch.from_dlpack(b).data_ptr() == t.data_ptr()  # one memory, both ways


def test_kernel_results_land_in_the_torch_tensor():
    n = 256
    x = torch.arange(n, dtype=torch.float32) * 0.5
    y = torch.zeros(n, dtype=torch.float32)
    bx, by = tessera.from_dlpack(x), tessera.from_dlpack(y)
    prog = tessera.compile(TWICE, "cpu:0")
    prog.launch("twice", n // 64, 64, [bx, by])      # the default stream: synchronous
    assert torch.equal(y, torch.arange(n, dtype=torch.float32))  # exact: v + v


def test_in_flight_work_keeps_the_memory_after_every_python_reference_is_gone():
    n = 1 << 16
    prog = tessera.compile(TWICE, "cpu:0")
    s = tessera.Stream("cpu:0")
    out = tessera.empty([n], "f32")
    for _ in range(8):  # asynchronous launches whose input dies at once
        x = torch.arange(n, dtype=torch.float32)
        prog.launch("twice", n // 64, 64, [tessera.from_dlpack(x), out], stream=s)
        del x
        gc.collect()
    s.synchronize()
    assert np.array_equal(out.numpy(), np.arange(n, dtype=np.float32) * 2)


def test_the_memory_outlives_the_producer_object():
    t = torch.arange(1000, dtype=torch.float64)
    b = tessera.from_dlpack(t)
    del t
    gc.collect()
    torch.zeros(1000, dtype=torch.float64)  # would reuse freed memory
    assert np.array_equal(b.numpy(), np.arange(1000, dtype=np.float64))


def test_a_misaligned_view_is_copied():
    t = torch.arange(33, dtype=torch.float32)
    b = tessera.from_dlpack(t[1:])                   # 4 bytes in: below the 16-byte alignment
    t[5] = 100.0
    assert b.numpy()[4] == 5.0                       # a copy: the later write is not seen
    assert np.array_equal(b.numpy(), np.arange(1, 33, dtype=np.float32))


def test_non_contiguous_views_are_copied_into_contiguous_buffers():
    t = torch.arange(35, dtype=torch.float32).reshape(5, 7)
    b = tessera.from_dlpack(t.T)                     # aligned, but strided
    assert b.strides == [5, 1]
    t[0, 1] = -3.0
    assert b.numpy()[1, 0] == 1.0                    # a copy: the later write is not seen
    assert np.array_equal(b.numpy(), np.arange(35, dtype=np.float32).reshape(5, 7).T)
