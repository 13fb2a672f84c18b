"""One torch.optim.AdamW step with timm's two parameter groups, for the
references (vit.py, swin.py): weight decay on the weight matrices of the
linear and patch layers, none on norm gains and biases, any bias, the position
embedding, the cls token or Swin's relative-position tables. With
decay_all=True every tensor decays (the negative control of
test/suites/param_groups.sh)."""

import torch


def one_step(params, grads, decayed, hp, decay_all=False):
    """params, grads: lists of arrays in file order; decayed: one bool each;
    hp: lr, beta1, beta2, eps, wd, clip. Returns the parameters after the step."""
    P = [torch.nn.Parameter(torch.tensor(p).clone()) for p in params]
    for q, g in zip(P, grads):
        q.grad = torch.tensor(g).clone()
    if hp["clip"] > 0:
        torch.nn.utils.clip_grad_norm_(P, hp["clip"])
    groups = [{"params": [q for q, d in zip(P, decayed) if d or decay_all],
               "weight_decay": hp["wd"]},
              {"params": [q for q, d in zip(P, decayed) if not (d or decay_all)],
               "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=hp["lr"],
                            betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    opt.step()
    return [q.detach().numpy().copy() for q in P]
