"""Training the shipped checkpoints: the date data (`dates`), the tasks that turn it into model input and back
(`tasks`, `induction`), and the trainer (`python -m explorer.training.train`)."""
