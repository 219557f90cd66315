"""The code family's data side: task loaders, the mutation engine, ground truth, the builders."""
