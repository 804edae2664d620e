# Sourced at the top of a device call's script (bench/results/*/callN.sh), in the repository
# root on the device: the toolkit on PATH, the GPU's name in $W/gpu.txt (and on stdout), and
# the kiln carried as .carry/kiln.xz (lzma, built on the build machine) unpacked to
# build/tools/kiln, named $K. Needs W, the call's scratch directory.
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p "$W" build/tools
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
  --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
K=build/tools/kiln
