"""PEARL-style contrastive fine-tuning: data augmentation, losses, checkpoints and trainer."""
