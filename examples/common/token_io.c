/* Token upload and loss download of the training examples (see token_io.h). */
#include "token_io.h"

#include "util.h"

int ex_upload_tokens(const gpt2_dev *dev, int *dtok, int *dtgt, const int *tok, const int *tgt,
                     size_t n) {
  size_t bytes = n * sizeof(int);
  TRY(gpt2_dev_upload(dev, dtok, tok, bytes));
  if (tgt) TRY(gpt2_dev_upload(dev, dtgt, tgt, bytes));
  return 0;
}

int ex_mean_loss(const gpt2_dev *dev, float *host, const float *losses, int n, float *loss) {
  TRY(gpt2_dev_download(dev, host, losses, (size_t)n * sizeof(float)));
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += host[i];
  *loss = (float)(s / n);
  return 0;
}
