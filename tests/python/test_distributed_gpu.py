"""tilefuse.nn models under torch.distributed on every GPU of the machine (one process each, NCCL): DDP and
FSDP2 (fully_shard) train 20 steps, and the loss of each step equals the one-GPU run with the same global
batch within bf16 noise. Each rank's kernels run on its own device and current stream; the ranks share one JIT
cache (its file locks). Skipped, with the reason, with fewer than 2 sm_90 GPUs."""
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from ranks import spawn  # noqa: E402

if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs sm_90 GPUs (tilefuse.nn.Linear runs the Hopper GEMM)", allow_module_level=True)
if torch.cuda.device_count() < 2:
    pytest.skip(f"needs 2 or more GPUs (this machine has {torch.cuda.device_count()}); run on an nvidia-h100-x2 / -x4 "
                "machine", allow_module_level=True)

STEPS, BATCH, D = 20, 64, 256


def make_model(channels_last_parameters=True):
    """The test's model; FSDP2 refuses channels-last parameters, so its run keeps them contiguous (tilefuse.nn.Conv2d
    copies such a weight to channels-last per call) and feeds channels-last inputs alike."""
    import tilefuse.nn as tnn

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = tnn.Conv2d(8, 32, 3, padding=1, activation="relu")
            self.up = tnn.Linear(32 * 8 * 8, D, activation="gelu")
            self.mid = tnn.Linear(D, D)
            self.out = torch.nn.Linear(D, 10)

        def forward(self, x):
            y = self.conv(x).flatten(1)
            y = self.up(y)
            y = self.mid(y, residual=y)
            return self.out(y)

    torch.manual_seed(0)
    model = Net().cuda().to(torch.bfloat16)
    return model.to(memory_format=torch.channels_last) if channels_last_parameters else model


def torch_twin():
    """make_model()'s network written with torch's own modules and its very weights: the reference the one-GPU
    tilefuse run is held to (else every run here is compared with tilefuse alone, and a kernel wrong on one GPU
    and on two alike would pass)."""
    F = torch.nn.functional

    class Twin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 32, 3, padding=1)
            self.up = torch.nn.Linear(32 * 8 * 8, D)
            self.mid = torch.nn.Linear(D, D)
            self.out = torch.nn.Linear(D, 10)

        def forward(self, x):
            y = torch.relu(self.conv(x)).flatten(1)
            y = F.gelu(self.up(y))
            y = self.mid(y) + y
            return self.out(y)

    twin = Twin().cuda().to(torch.bfloat16).to(memory_format=torch.channels_last)
    twin.load_state_dict(make_model().state_dict())
    return twin


def data(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(BATCH, 8, 8, 8, generator=g).to("cuda", torch.bfloat16).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (BATCH,), generator=g).cuda()
    return x, y


def train(model, rank, world):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        x, y = data(step)
        x, y = x.chunk(world)[rank], y.chunk(world)[rank]  # this rank's share of the global batch
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        if world > 1:
            dist.all_reduce(reduced)
        losses.append(reduced.item() / world)
    return losses


def run_rank(rank, world, init_file, how, cache_dir, results):
    import os

    os.environ["TILEFUSE_CACHE_DIR"] = cache_dir  # one cache for every rank
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    try:
        model = make_model(channels_last_parameters=how == "ddp")
        if how == "ddp":
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
        else:
            from torch.distributed.fsdp import fully_shard

            for module in (model.conv, model.up, model.mid):
                fully_shard(module)
            fully_shard(model)
        results.put((rank, train(model, rank, world)))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        results.put((rank, f"{type(error).__name__}: {error}"))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("how", ["ddp", "fsdp"])
def test_training_matches_one_gpu(tmp_path, how):
    single = train(make_model(), 0, 1)
    reference = train(torch_twin(), 0, 1)  # torch's kernels, the same weights, data and steps
    for step, (got, want) in enumerate(zip(single, reference)):
        assert abs(got - want) <= 0.02 * abs(want) + 0.02, ("one GPU against torch", step, got, want)
    world = torch.cuda.device_count()
    outcomes = spawn(run_rank, world, (str(tmp_path / "rendezvous"), how, str(tmp_path / "cache")), timeout=600)
    assert all(isinstance(v, list) for v in outcomes.values()), outcomes
    for rank, losses in outcomes.items():
        assert losses == outcomes[0], f"rank {rank} saw other losses"
        for step, (got, want) in enumerate(zip(losses, single)):
            # bf16 noise: the gradients are summed in another order (per-rank, then all-reduced)
            assert abs(got - want) <= 0.02 * abs(want) + 0.02, (how, step, got, want)
