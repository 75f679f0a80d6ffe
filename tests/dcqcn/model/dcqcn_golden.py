# Reference model of the DCQCN reaction point: the pseudo-code of docs/dcqcn-pfc.md §1.4
# (paper form) and §1.5 (NVIDIA firmware form) as a plain event simulation, written for
# uroce's design, independent of its C++ code. tests/dcqcn/gen_golden.py runs it to produce
# golden_traces.inc; the C++ reaction points must reproduce those traces (rp_golden_test).
# Importing it prints its summary tables (the §1.6 traces).
import math

def paper_rp(C=40e9, g=1/256, K=55e-6, T=55e-6, B=10e6, F=5, R_AI=40e6, R_HAI=400e6,
             cnp_times=(0.0,), t_end=3e-3, sample=None, fr_le=True):
    """Paper-style RP (Zhu et al. 2015) as an event simulation.
    fr_le=True : events 1..F are fast recovery (htsim convention: max(T,BC)<=F)
    fr_le=False: events 1..F-1 are FR (QCN/ns3-rdma convention)"""
    Rc=Rt=C; alpha=1.0
    Tcnt=BCcnt=0; bytes_acc=0.0
    t=0.0
    cnps=sorted(cnp_times); ci=0
    next_timer=None; next_alpha=None
    log=[]
    def inc():
        nonlocal Rc,Rt
        if (max(Tcnt,BCcnt) <= F) if fr_le else (max(Tcnt,BCcnt) < F):
            Rc=(Rt+Rc)/2; ph='FR'
        elif min(Tcnt,BCcnt) > F:
            i=min(Tcnt,BCcnt)-F; Rt=Rt+i*R_HAI; Rc=(Rt+Rc)/2; ph='HI'
        else:
            Rt=Rt+R_AI; Rc=(Rt+Rc)/2; ph='AI'
        Rt=min(Rt,C); Rc=min(Rc,C)
        return ph
    while True:
        cands=[]
        if ci<len(cnps): cands.append((cnps[ci],'cnp'))
        if next_timer is not None: cands.append((next_timer,'timer'))
        if next_alpha is not None: cands.append((next_alpha,'alpha'))
        # byte counter expiry time
        if next_timer is not None:
            tb = t + (B-bytes_acc)*8/Rc
            cands.append((tb,'bc'))
        cands.append((t_end,'end'))
        tn,ev=min(cands)
        bytes_acc += (tn-t)*Rc/8 if next_timer is not None else 0
        t=tn
        if ev=='end': break
        if ev=='cnp':
            ci+=1
            Rt=Rc; Rc=Rc*(1-alpha/2); alpha=(1-g)*alpha+g
            Tcnt=BCcnt=0; bytes_acc=0.0
            next_timer=t+T; next_alpha=t+K
            log.append((t,'CNP',Rc,Rt,alpha))
        elif ev=='alpha':
            alpha=(1-g)*alpha; next_alpha=t+K
        elif ev=='timer':
            Tcnt+=1; ph=inc(); next_timer=t+T
            log.append((t,'T'+ph,Rc,Rt,alpha))
        elif ev=='bc':
            BCcnt+=1; bytes_acc=0.0; ph=inc()
            log.append((t,'B'+ph,Rc,Rt,alpha))
    return log

def mlx_rp(C=100e9, g=1/256, t_alpha=1e-6, t_dec=4e-6, t_inc=300e-6, thresh=1,
           R_AI=5e6, R_HAI=50e6, Rmin=100e6, cnp_times=(0.0,), t_end=3e-3,
           clamp=False, rate_first=1.0):
    """Model of the HPCC simulator's 'Mellanox DCQCN' (rdma-hw.cc, CC_MODE 1)."""
    Rc=C; Rt=C; alpha=1.0
    first=True; a_cnp=False; d_cnp=False; stage=0
    events=[]  # (time, kind)
    cnps=list(cnp_times); ci=0
    next_alpha=next_dec=next_inc=None
    log=[]
    t=0.0
    while True:
        cands=[(t_end,'end')]
        if ci<len(cnps): cands.append((cnps[ci],'cnp'))
        for x,k in ((next_alpha,'alpha'),(next_dec,'dec'),(next_inc,'inc')):
            if x is not None: cands.append((x,k))
        t,ev=min(cands)
        if ev=='end': break
        if ev=='cnp':
            ci+=1; a_cnp=True; d_cnp=True
            if first:
                alpha=1.0; a_cnp=False
                next_alpha=t+t_alpha; next_dec=t+t_dec+1e-9
                Rt=Rc=rate_first*Rc; first=False
        elif ev=='alpha':
            alpha = (1-g)*alpha + (g if a_cnp else 0.0); a_cnp=False
            next_alpha=t+t_alpha
        elif ev=='dec':
            next_dec=t+t_dec
            if d_cnp:
                if clamp or stage!=0: Rt=Rc
                Rc=max(Rmin, Rc*(1-alpha/2)); stage=0; d_cnp=False
                next_inc=t+t_inc
                log.append((t,'DEC',Rc,Rt,alpha))
        elif ev=='inc':
            next_inc=t+t_inc
            if stage<thresh: ph='FR'
            elif stage==thresh: Rt=min(C,Rt+R_AI); ph='AI'
            else: Rt=min(C,Rt+R_HAI); ph='HAI'
            Rc=Rc/2+Rt/2; stage+=1
            log.append((t,ph,Rc,Rt,alpha))
    return log

def show(log, n=14, unit=1e9):
    for (t,k,rc,rt,a) in log[:n]:
        print(f"  t={t*1e6:9.3f}us {k:6s} Rc={rc/unit:9.4f}G Rt={rt/unit:9.4f}G alpha={a:.6f}")

print("G1: paper RP, C=40G, single CNP at t=0 (FR events 1..5, htsim convention)")
show(paper_rp(fr_le=True), n=12)
print("G1b: same but QCN/ns3-rdma convention (F-th event already leaves FR)")
show(paper_rp(fr_le=False), n=8)
print("G2: two CNPs 10us apart, paper RP, C=40G")
show(paper_rp(cnp_times=(0.0,10e-6)), n=6)
print("G3: HPCC 'mlx' DCQCN (=NVIDIA FW defaults approx), C=100G, one CNP at t=0, g=1/256, t_alpha=1us")
show(mlx_rp(), n=10)
print("G3b: same with FW dce_tcp_g=1019 -> g=5/1024")
show(mlx_rp(g=5/1024), n=4)
print("G4: HPCC 'dcqcn_paper' setting: t_alpha=50, t_dec=50, t_inc=55, F=1, AI=20M, HAI=200M @100G")
show(mlx_rp(t_alpha=50e-6,t_dec=50e-6,t_inc=55e-6,R_AI=20e6,R_HAI=200e6,Rmin=1e9), n=8)
