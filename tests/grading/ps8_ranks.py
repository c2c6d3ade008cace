"""What test_ps8's oracles run on each rank: PyTorch's own DDP and FSDP2 on ps8's models. A module of its own, which
imports no conftest: a rank's process imports the task's module afresh, and whichever conftest comes first on its
path is not the one a test module expects."""


def pytorch_ddp_buckets(rank, world, specs):
    """On each rank: PyTorch's own DDP on each spec's model, its caps made DDP's defaults (it gives the first bucket a
    cap of its own only at its default cap); the buckets its communication hook is handed in three steps, each as
    its parameters' indices."""
    import torch
    import torch.distributed as dist
    import torch.nn.parallel.distributed as ddp
    from torch.nn.functional import cross_entropy

    from ppedu.grading.assignments.ps8 import model

    out = []
    for spec in specs:
        net = model(spec)
        ddp._DEFAULT_BUCKET_CAP_MB, dist._DEFAULT_FIRST_BUCKET_BYTES = spec[2][0] / 2**20, spec[2][1]
        wrapped = ddp.DistributedDataParallel(net)
        index = {id(p): i for i, p in enumerate(net.parameters())}
        steps = []

        def hook(state, bucket, steps=steps):
            steps[-1].append([index[id(p)] for p in bucket.parameters()])
            return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
        wrapped.register_comm_hook(None, hook)
        for _ in range(3):
            steps.append([])
            cross_entropy(wrapped(torch.randn(4, 1, 28, 28, dtype=torch.float64)), torch.arange(4)).backward()
        out.append(steps)
    return out


def pytorch_fsdp2_inputs(rank, world, spec):
    """On each rank: PyTorch's own FSDP2 (``fully_shard``) on the spec's model, and what it handed its first
    reduce-scatter and its first all-gather; beside them the unsharded model's gradient and parameters."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.nn.functional import cross_entropy

    from ppedu.grading.assignments.ps8 import model

    seen = {}
    scatter, gather = dist.reduce_scatter_single, dist.all_gather_single

    def scattering(output, input, **kwargs):
        seen.setdefault("scattered", input.clone())
        return scatter(output, input, **kwargs)

    def gathering(output, input, **kwargs):
        seen.setdefault("gathered", input.clone())
        return gather(output, input, **kwargs)
    dist.reduce_scatter_single, dist.all_gather_single = scattering, gathering  # FSDP2's default collectives call these
    x, y = torch.randn(6, 1, 28, 28, dtype=torch.float64, generator=torch.Generator().manual_seed(0)), torch.arange(6)
    whole, sharded = model(spec), model(spec)
    fully_shard(sharded, mesh=init_device_mesh("cpu", (world,)))
    cross_entropy(sharded(x), y).backward()
    cross_entropy(whole(x), y).backward()
    flat = [torch.cat([getattr(p, what).detach().reshape(-1) for p in whole.parameters()]) for what in ("grad", "data")]
    return seen["scattered"], seen["gathered"], *flat
