REPO=$(pwd)
R=$OUT/r; mkdir -p $R
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_CUDA_ARCHS=90a -DTILEFUSE_BUILD_TESTS=OFF -DTILEFUSE_BUILD_GPU_TESTS=OFF -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_BUILD_BENCH=ON > $R/configure.log 2>&1
(time ninja -C bd -j16 bench/tilefuse-bench) > $R/build.log 2>&1 || { tail -30 $R/build.log; tar czf $OUT/r.tgz -C $OUT r; exit 1; }
tail -3 $R/build.log
cd $R
for l in "l9 --n 64 --h 14 --w 14 --c 1024 --k 512 --r 1 --s 1" "l6 --n 64 --h 28 --w 28 --c 512 --k 256 --r 1 --s 1"; do
  n=${l%% *}; OUT=$R timeout 170 $REPO/scripts/gpu/profile_conv_layer.sh $REPO/bd $l > $R/ncu-$n.log 2>&1; echo "ncu $n rc $?"
  python3 $REPO/scripts/gpu/ncu_kernel_table.py $R/ncu-$n-kernels.csv 2>&1 | head -40
done
cd $REPO && tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
