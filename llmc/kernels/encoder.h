// Token + position embedding: out[b,t] = E(wte[tok]) + E(wpe[t]), where E is
// the identity, or in CBWC the centring of each row over C (wte as an
// embedding and wpe are linear layers whose output axis is C).
#ifndef FOLDNORM_ENCODER_H
#define FOLDNORM_ENCODER_H

void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                     int T, int C, int centred);
// dwte[tok] += E(dout[b,t]), dwpe[t] += E(dout[b,t]) (E is linear and P symmetric).
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int T,
                      int C, int centred);

#endif
