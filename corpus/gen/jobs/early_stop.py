"""A Keras-style fit loop on CPU whose learning rate explodes, so that its loss becomes
NaN; early stopping on val_loss (patience 3) then ends training normally, as Keras'
EarlyStopping does with its default verbose=0: no message, exit status 0. The log's
last line is the last epoch's summary, with loss: nan."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(512, 16)
y = x @ torch.randn(16, 1) + 0.1 * torch.randn(512, 1)
xv, yv = x[:128], y[:128]
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()
epochs, patience = 50, 3
best, waited = math.inf, 0
for epoch in range(1, epochs + 1):
    if epoch == 6:
        for g in opt.param_groups:
            g["lr"] = 1e6  # a schedule gone wrong: the weights blow up
    print("Epoch %d/%d" % (epoch, epochs), flush=True)
    total = 0.0
    for i in range(0, 512, 64):
        opt.zero_grad()
        loss = loss_fn(model(x[i:i + 64]), y[i:i + 64])
        loss.backward()
        opt.step()
        total += loss.item()
    with torch.no_grad():
        val = loss_fn(model(xv), yv).item()
    print("8/8 [==============================] - 0s 2ms/step - loss: %.4f - val_loss: %.4f"
          % (total / 8, val), flush=True)
    if val < best:  # NaN is never smaller: no improvement from here on
        best, waited = val, 0
    else:
        waited += 1
        if waited >= patience:
            break
