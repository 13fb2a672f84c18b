// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#ifndef FOLDNORM_GELU_H
#define FOLDNORM_GELU_H

#include <stddef.h>

void gelu_forward(float *out, const float *inp, size_t n);
// dinp = gelu'(inp) * dout (overwrites dinp).
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

#endif
