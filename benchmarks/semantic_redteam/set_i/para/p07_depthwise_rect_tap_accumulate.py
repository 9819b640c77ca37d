import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Depthwise 2-D convolution (one kh x kw filter per channel) computed by accumulating the
    kernel taps over strided, dilated slices of the zero-padded input. The channel count is
    preserved, so no separate output-channel argument is needed."""

    def __init__(self, in_channels, kernel_size_h, kernel_size_w, stride_h=1, stride_w=1, padding_h=0,
                 padding_w=0, dilation_h=1, dilation_w=1, bias=False):
        super().__init__()
        self.kernel = (kernel_size_h, kernel_size_w)
        self.stride = (stride_h, stride_w)
        self.padding = (padding_h, padding_w)
        self.dilation = (dilation_h, dilation_w)
        bound = 1.0 / math.sqrt(kernel_size_h * kernel_size_w)
        self.weight = nn.Parameter(torch.empty(in_channels, kernel_size_h, kernel_size_w).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(in_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        kh, kw = self.kernel
        sh, sw = self.stride
        ph, pw = self.padding
        dh, dw = self.dilation
        x = F.pad(x, (pw, pw, ph, ph))
        B, C, H, W = x.shape
        H_out = (H - dh * (kh - 1) - 1) // sh + 1
        W_out = (W - dw * (kw - 1) - 1) // sw + 1
        out = x.new_zeros(B, C, H_out, W_out)
        for i in range(kh):
            for j in range(kw):
                tap = x[:, :, i * dh: i * dh + (H_out - 1) * sh + 1: sh, j * dw: j * dw + (W_out - 1) * sw + 1: sw]
                out = out + tap * self.weight[:, i, j].view(1, C, 1, 1)
        if self.bias is not None:
            out = out + self.bias.view(1, C, 1, 1)
        return out


batch_size = 32
in_channels = 128
kernel_size_h = 3
kernel_size_w = 7
width = 256
height = 128
stride_h = 1
stride_w = 1
padding_h = 0
padding_w = 0
dilation_h = 1
dilation_w = 1


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, kernel_size_h, kernel_size_w, stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w]
