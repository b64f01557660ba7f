# PyTorch (CUDA) on the same GPU as bench/webgpu-steps.ts' BENCH_SIZE=large cases: matmul 4096
# float32 (TF32 off: the WebGPU kernels compute in float32), and the MLP, LSTM and CNN training
# steps with SGD, each step uploading its batch and reading the loss back, as the WebGPU ones do.
# Medians of 20 steps after 5 warm-ups, in ms.
import statistics, time
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device('cuda')
print('torch', torch.__version__, torch.cuda.get_device_name(0))

def timed(step, reps=20, warm=5):
    for _ in range(warm): step()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); step(); torch.cuda.synchronize(); ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)

N = 4096
A = torch.rand(N, N, device=dev) * 2 - 1; B = torch.rand(N, N, device=dev) * 2 - 1; C = torch.empty(N, N, device=dev)
t = timed(lambda: torch.matmul(A, B, out=C))
print(f'torch matmul {N} float32: {t:.2f} ms, {2 * N**3 / t / 1e6:.0f} GFLOP/s')

def train(model, make_batch, loss_fn):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xh, th = make_batch()
    def step():
        x, y = xh.to(dev, non_blocking=False), th.to(dev, non_blocking=False)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward(); opt.step()
        return loss.item()
    return timed(step)

soft_ce = lambda out, t: -(t * torch.log_softmax(out, 1)).sum(1).mean()
mlp = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
print(f'torch MLP train step 784-1024-10 b1024: {train(mlp, lambda: (torch.rand(1024, 784), torch.rand(1024, 10) * 0.2), soft_ce):.2f} ms')

class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.rnn = torch.nn.LSTM(28, 512, batch_first=True)
    def forward(self, x):
        return self.rnn(x)[0][:, -1]
lstm = Lstm().to(dev)
print(f'torch LSTM (cuDNN) fwd+bwd b256 T28 28->512: {train(lstm, lambda: (torch.rand(256, 28, 28) * 2 - 1, torch.rand(256, 512) - 0.5), lambda o, y: ((o - y) ** 2).mean()):.2f} ms')

cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(14 * 14 * 64, 10)).to(dev)
print(f'torch CNN train step b256 conv 3x3 64, maxpool 2, dense 10: {train(cnn, lambda: (torch.rand(256, 1, 28, 28), torch.rand(256, 10) * 0.2), soft_ce):.2f} ms')
