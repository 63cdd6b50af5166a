"""x-transformers: the README's recipes at toy size on random tokens (nothing downloaded): the enwik8
decoder training loop (AutoregressiveWrapper loss, backward, clip_grad_norm_, Adam, loss.item()
logging, validation, then generation with top-k/top-p/min-p/top-a filtering, eos, variable prompt
lengths, kv cache, beam search), an encoder-decoder copy task (XTransformer), and a zoo of
variants (ViT classifier, continuous autoregressive wrapper, non-autoregressive MLM with a token
critic, XL recurrence, xVal numbers, DPO, a decoder with many options)."""

import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import x_transformers

    return os.path.dirname(os.path.realpath(x_transformers.__file__))


def _opt_step(model, opt, loss, clip=0.5):
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    opt.zero_grad()


@scenario
def decoder_train_generate(ctx):
    """train_enwik8.py at toy size: TransformerWrapper(Decoder(rotary, flash-off)) in an
    AutoregressiveWrapper; 6 steps with gradient accumulation of 2, loss.item() printed, a
    validation loss every 3 steps, then generate() with the default top_k, top_p, min_p, top_a,
    temperature 0 (greedy), eos_token with variable prompt_lens, cache_kv on and off, and
    beam_search."""
    from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

    dev = ctx.device
    torch.manual_seed(0)
    model = TransformerWrapper(num_tokens=256, max_seq_len=64,
                               attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True)).to(dev)
    model = AutoregressiveWrapper(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    data = torch.randint(0, 256, (64, 65), device=dev)

    def run():
        for i in range(6):
            model.train()
            for _ in range(2):
                idx = torch.randint(0, 64, (4,), device=dev)
                loss = model(data[idx])
                (loss / 2).backward()
            print(f"training loss: {loss.item()}")
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()
            if i % 3 == 0:
                model.eval()
                with torch.no_grad():
                    loss = model(data[:4])
                    print(f"validation loss: {loss.item()}")
        prime = data[:2, :16]
        out = model.generate(prime, 16)
        out = model.generate(prime, 12, filter_logits_fn="top_p", filter_kwargs=dict(thres=0.9))
        out = model.generate(prime, 12, filter_logits_fn="min_p")
        out = model.generate(prime, 12, filter_logits_fn="top_a")
        out = model.generate(prime, 12, temperature=0.0)
        out = model.generate(prime, 12, cache_kv=False)
        out = model.generate(prime, 20, eos_token=5, prompt_lens=torch.tensor([16, 10], device=dev))
        out = model.beam_search(prime, 8, beams=3)
        out = model.beam_search(prime, 8, beams=2, return_beams_and_scores=True)
        return out

    return run


@scenario
def enc_dec_copy(ctx):
    """The README's copy task: XTransformer (encoder-decoder, tied embeddings) trained 6 steps with
    a source mask, loss.item() logged; then generate() of the copies and the accuracy of the
    decoded tokens as a Python float."""
    from x_transformers import XTransformer

    dev = ctx.device
    torch.manual_seed(0)
    model = XTransformer(dim=64, enc_num_tokens=20, enc_depth=2, enc_heads=4, enc_max_seq_len=48,
                         dec_num_tokens=20, dec_depth=2, dec_heads=4, dec_max_seq_len=48,
                         tie_token_emb=True).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)

    def batch(n=8, L=16):
        prefix = torch.ones((n, 1), dtype=torch.long, device=dev)
        src = torch.randint(2, 20, (n, L), device=dev)
        tgt = torch.cat((prefix, src, src), 1)
        src_mask = torch.ones_like(src).bool()
        return src, tgt, src_mask

    def run():
        for i in range(6):
            model.train()
            src, tgt, src_mask = batch()
            loss = model(src, tgt, mask=src_mask)
            _opt_step(model, opt, loss)
            print(f"{i}: {loss.item()}")
        model.eval()
        src, _, src_mask = batch(2)
        start = torch.ones((2, 1), dtype=torch.long, device=dev)
        sample = model.generate(src, start, seq_len=16, mask=src_mask)
        incorrect = (src != sample).long().abs().sum()
        print(f"incorrects: {incorrect}")
        return float(incorrect)

    return run


@scenario
def variants_zoo(ctx):
    """One or two training steps and an eval/sampling pass of: ViTransformerWrapper image
    classification with accuracy; ContinuousTransformerWrapper + ContinuousAutoregressiveWrapper
    (mask, generate); NonAutoregressiveWrapper (MLM with self-conditioning and a token critic,
    generate); XLAutoregressiveWrapper over a long sequence with memories and generate; xVal
    numbers (XValTransformerWrapper/XValAutoregressiveWrapper, generate); DPO on preferred /
    unpreferred sequences; a Decoder with alibi, memory kv, residual attention, gated residual,
    GLU feed-forward, macaron, sandwich norm, token shift, RMSNorm, dynamic position bias, value
    residual and attention z-loss; an Encoder with relative position bias for classification with
    attention pooling."""
    import x_transformers as X

    dev = ctx.device
    torch.manual_seed(0)
    vit = X.ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10,
                                 attn_layers=X.Encoder(dim=64, depth=2, heads=4)).to(dev)
    cont = X.ContinuousTransformerWrapper(dim_in=8, dim_out=8, max_seq_len=32,
                                          attn_layers=X.Decoder(dim=64, depth=2, heads=4)).to(dev)
    cont_ar = X.ContinuousAutoregressiveWrapper(cont)
    mlm_net = X.TransformerWrapper(num_tokens=33, max_seq_len=32,
                                   attn_layers=X.Encoder(dim=64, depth=2, heads=4)).to(dev)
    nar = X.NonAutoregressiveWrapper(mlm_net, mask_id=32, steps=4, self_cond=True, self_token_critic=True).to(dev)
    xl_net = X.TransformerWrapper(num_tokens=64, max_seq_len=16, max_mem_len=16,
                                  attn_layers=X.Decoder(dim=64, depth=2, heads=4, rel_pos_bias=True)).to(dev)
    xl = X.XLAutoregressiveWrapper(xl_net)
    xval_net = X.XValTransformerWrapper(num_tokens=16, numerical_token_id=3, max_seq_len=32,
                                        attn_layers=X.Decoder(dim=64, depth=2, heads=4)).to(dev)
    xval = X.XValAutoregressiveWrapper(xval_net)
    dpo_net = X.TransformerWrapper(num_tokens=64, max_seq_len=32,
                                   attn_layers=X.Decoder(dim=64, depth=1, heads=4)).to(dev)
    dpo = X.DPO(dpo_net, beta=0.1, pad_id=0).to(dev)
    fancy = X.TransformerWrapper(
        num_tokens=64, max_seq_len=32, num_memory_tokens=2,
        attn_layers=X.Decoder(dim=64, depth=3, heads=4, alibi_pos_bias=True, attn_num_mem_kv=2,
                              residual_attn=True, gate_residual=True, ff_glu=True, macaron=True,
                              sandwich_norm=True, shift_tokens=1, use_rmsnorm=True, add_value_residual=True,
                              attn_qk_norm=True)).to(dev)
    fancy_ar = X.AutoregressiveWrapper(fancy, add_attn_z_loss=True)
    dyn = X.TransformerWrapper(num_tokens=64, max_seq_len=32,
                               attn_layers=X.Decoder(dim=64, depth=2, heads=4, dynamic_pos_bias=True)).to(dev)
    dyn_ar = X.AutoregressiveWrapper(dyn)
    cls = X.TransformerWrapper(num_tokens=64, max_seq_len=32, logits_dim=5, use_cls_token=True,
                               attn_layers=X.Encoder(dim=64, depth=2, heads=4, rel_pos_bias=True)).to(dev)
    mods = [vit, cont_ar, nar, xl, xval, dpo, fancy_ar, dyn_ar, cls]
    opt = torch.optim.Adam([p for m in mods for p in m.parameters() if p.requires_grad], lr=1e-4)

    def step(loss):
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()

    def run():
        for m in mods:
            m.train()
        img = torch.randn(4, 3, 32, 32, device=dev)
        labels = torch.randint(0, 10, (4,), device=dev)
        logits = vit(img)
        print("vit", step(torch.nn.functional.cross_entropy(logits, labels)))
        acc = (logits.argmax(-1) == labels).float().mean().item()

        x = torch.randn(2, 24, 8, device=dev)
        mask = torch.ones(2, 24, dtype=torch.bool, device=dev)
        print("cont", step(cont_ar(x, mask=mask)))
        cont_ar.eval()
        cont_ar.generate(x[:, :4], 8)

        seq = torch.randint(0, 32, (4, 32), device=dev)
        out = nar(seq)
        print("nar", step(out.loss))
        nar.eval()
        nar.generate(batch_size=2)

        long = torch.randint(0, 64, (2, 48), device=dev)
        print("xl", step(xl(long)))
        xl.eval()
        xl.generate(long[:, :8], 24)

        ids = torch.randint(4, 16, (2, 24), device=dev)
        ids[:, ::4] = 3
        nums = torch.randn(2, 24, device=dev)
        nums[ids != 3] = float("nan")
        print("xval", step(xval(ids, nums)))
        xval.eval()
        xval.generate(ids[:, :8], nums[:, :8], 8)

        pref = torch.randint(1, 64, (2, 24), device=dev)
        unpref = torch.randint(1, 64, (2, 24), device=dev)
        prompt_mask = torch.zeros(2, 24, dtype=torch.bool, device=dev)
        prompt_mask[:, :8] = True
        print("dpo", step(dpo(pref, unpref, prompt_mask=prompt_mask)))

        toks = torch.randint(0, 64, (2, 32), device=dev)
        print("fancy", step(fancy_ar(toks)))
        fancy_ar.eval()
        fancy_ar.generate(toks[:, :8], 8)
        print("dyn", step(dyn_ar(toks)))
        dyn_ar.eval()
        dyn_ar.generate(toks[:, :8], 8, cache_kv=False)
        y = torch.randint(0, 5, (2,), device=dev)
        print("cls", step(torch.nn.functional.cross_entropy(cls(toks), y)))
        return acc

    return run
