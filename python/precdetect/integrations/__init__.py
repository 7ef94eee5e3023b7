"""Guards that check a model where training starts, before the first step, and stop a run in fp16 that fp16 is
unsafe for: precdetect.integrations.transformers.PrecisionGuardCallback (a transformers Trainer callback) and
precdetect.integrations.lightning.PrecisionGuard (a Lightning callback). Each module imports only its own
framework."""
