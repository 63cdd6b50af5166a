"""Names that say where a value lives, read last and with lower confidence than what code proves."""

import torch


def named(ids_cpu, positions_np, tokens_gpu, is_cuda, use_gpu, host_buffer, batch, kwargs, buf):
    ids_cpu  # where: host medium (ids_cpu is a host value by its name)
    positions_np  # where: host medium
    tokens_gpu  # where: device medium (tokens_gpu is on the device by its name)
    is_cuda  # where: host medium (is_cuda is a flag by its name)
    use_gpu  # where: host medium (use_gpu is a flag by its name)
    host_buffer  # where: host medium
    batch["seq_lens_cpu"]  # where: host medium
    kwargs.pop("seq_lens_cpu", None)  # where: host medium
    buf.gpu  # where: device medium (a .gpu buffer)
    buf.cpu  # where: host-tensor high (a .cpu buffer)
    buf.np  # where: host high
    batch.block_table_gpu  # where: device medium
    batch  # where: unknown


def annotated(query_start_loc_cpu: torch.Tensor, seq_lens: torch.Tensor):
    query_start_loc_cpu  # where: host-tensor medium (query_start_loc_cpu is a host value by its name)
    seq_lens  # where: device low
