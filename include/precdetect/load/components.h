#pragma once
/// Single-file pipeline checkpoints: Stable Diffusion 1/2 and XL as A1111 and ComfyUI load them, SD3 and FLUX as
/// ComfyUI saves them. One file holds the denoiser, the VAE and the text encoders side by side under component
/// prefixes (diffusers' loaders/single_file_utils.py reads the same prefixes: LDM_UNET_KEY, LDM_VAE_KEYS,
/// LDM_CLIP_PREFIX_TO_REMOVE, the text_encoders.* keys). They behave very differently in fp16, so each is scanned
/// as a model of its own, named `FILE#COMPONENT`.

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// The component a tensor belongs to by its name's prefix: "diffusion_model" (`model.diffusion_model.`), "vae"
/// (`first_stage_model.`, `vae.`), "text_encoder" (`cond_stage_model.`, `conditioner.embedders.0.`),
/// "text_encoder_2" (`conditioner.embedders.1.`), "clip_l", "clip_g", "t5xxl" (`text_encoders.*.`); "other" for a
/// name under none of them (a scheduler's `alphas_cumprod`, EMA copies).
std::string_view component_of(std::string_view tensor);

/// The components of a checkpoint whose tensors fall under two or more component prefixes, in the order above
/// with "other" last when any tensor is under none; empty for a checkpoint that is one model.
std::vector<std::string> single_file_components(std::span<const TensorRecord> tensors);

/// The components of the single file `file` (safetensors, or a torch file), by single_file_components over its
/// tensors' names; empty for one model. A safetensors file's header alone is read, with pread (nothing is mapped),
/// or by range where `file` is a URL (net/url.h). Throws Error where the file cannot be read as a checkpoint.
std::vector<std::string> file_components(const std::filesystem::path& file);

struct ComponentInput {
  std::string file;
  std::string component;
};

/// "sd_xl_base_1.0.safetensors#vae" as the file and the component, when the part after the last `#` is a
/// component's name; nullopt for any other input, and for one that names an existing path as typed (a path may
/// hold `#` itself).
std::optional<ComponentInput> component_input(std::string_view input);

}  // namespace precdetect
