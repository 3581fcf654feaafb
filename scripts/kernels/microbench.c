/* Cache-resident kernel throughput per ISA (64 rows x 2048 cols, weights in L2): what the kernels compute
 * when memory is not the limit. Build: see check-isa.sh (same sources), e.g.
 *   S=Sources/CLeapKernels; clang -O3 -fno-math-errno -I$S/include -I$S scripts/kernels/microbench.c \
 *     $(find $S -name '*.c') -lm -lpthread */
#include "leap_kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
static double cpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int types[]={LK_TYPE_Q4_0,LK_TYPE_Q8_0,LK_TYPE_Q4_K,LK_TYPE_Q6_K,LK_TYPE_Q4_1,LK_TYPE_Q5_0};
  const char*names[]={"q4_0","q8_0","q4_K","q6_K","q4_1","q5_0"};
  int64_t cols=2048, rows=64;
  for(int isa=0;isa<5;isa++){ if(!lk_isa_available(isa)) continue; lk_set_isa(isa);
  for(int ti=0;ti<6;ti++){int ty=types[ti];
    size_t rb=lk_row_bytes(ty,cols); unsigned char*w=malloc(rb*rows); for(size_t i=0;i<rb*rows;i++) w[i]=rand();
    int64_t bs=lk_block_size(ty); size_t bb=lk_block_bytes(ty);
    for(int64_t b=0;b<rows*cols/bs;b++){ unsigned char*p=w+b*bb; if(ty==LK_TYPE_Q6_K){p[208]=0;p[209]=0x1c;} else {p[0]=0;p[1]=0x1c; if(ty==LK_TYPE_Q4_K){p[2]=0;p[3]=0x1c;}}}
    float x[2048*4]; for(int i=0;i<2048*4;i++) x[i]=(i%17)-8;
    int at=lk_activation_type(ty); size_t xr=lk_row_bytes(at,cols); unsigned char*xq=malloc(xr*4);
    for(int t=0;t<4;t++) lk_quantize_row(at,x+t*cols,xq+t*xr,cols);
    float y[64*4]; int iters=isa==0?100:2000;
    double t0=cpu(); for(int it=0;it<iters;it++) lk_matmul(ty,w,rb,cols,xq,xr,1,y,rows,0,rows); double t1=cpu();
    for(int it=0;it<iters;it++) lk_matmul(ty,w,rb,cols,xq,xr,4,y,rows,0,rows); double t2=cpu();
    double macs=(double)rows*cols*iters;
    printf("%-14s %s matvec %.1f GFLOP/s  matmul4 %.1f GFLOP/s\n",lk_isa_name(isa),names[ti],2*macs/(t1-t0)/1e9,8*macs/(t2-t1)/1e9);
  }}
}
