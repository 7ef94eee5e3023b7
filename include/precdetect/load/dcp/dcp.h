#pragma once
/// A torch.distributed.checkpoint (DCP) folder as one checkpoint: its `.metadata` (dcp_metadata.h) is the file the
/// scan opens, and the `.distcp` files it names hold the tensors' chunks, each a torch.save archive read in place
/// by the torch zip reader.

#include <memory>

#include "precdetect/load/file_format.h"

namespace precdetect {

/// The file opened as a DCP folder's metadata when it is named `.metadata`, or `__N.metadata` (one rank's, as
/// dcp.save(..., use_collectives=False) writes one per rank), and starts a pickle, else nullptr. A rank's file
/// stands for the folder's every rank: `__0.metadata` to `__N-1.metadata`, read and joined (join_dcp_ranks; a
/// rank missing between them is kMissingShard), and each rank's pickles, and those of the archives it names, are
/// named to the pickle visitor. Reading it maps the `.distcp` files it names (appended to Checkpoint::files, read as
/// the metadata's file is: mapped or pread; an archive written through DCP's zstd extension is inflated, within
/// what its chunk may hold, into a source of its own appended there too) and adds one record per tensor, or per chunk
/// of a tensor stored in several (TensorRecord:: chunk_of, under the tensor's name); entries that are no tensor are
/// never unpickled. It returns "dcp". Names are the FQNs dcp.save wrote (`model.layers.0.weight`, `app.model...`);
/// those below an optimizer's key
/// (`optim.state...`, after an `app` wrapper) get TensorRole::kOptimizer. Errors: those of read_dcp_metadata;
/// kMissingShard (a `.distcp` file it names is absent); kOffsetPastEnd (an archive past its file's end);
/// kCompressedEntry (a zstd frame that inflates past its chunk's bound, or is damaged: inflate_zstd_frame);
/// kInvalidDcp (an archive that is not one torch.save'd tensor of its chunk's shape, chunks of one tensor in
/// several dtypes); those of read_torch_zip, each naming the tensor. Its pickles: the metadata (which dcp.load
/// unpickles with pickle.load), then every chunk's and every other entry's archive, each nested as a torch zip;
/// what it cannot list or open is unverified.
std::unique_ptr<FormatFile> open_dcp(const ByteSource& source);

}  // namespace precdetect
