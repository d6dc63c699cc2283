# bash completion for ringlog(1)                           -*- shell-script -*-
#
# Subcommands, their options (read from `ringlog COMMAND --help`, so that
# they follow the program), option values, and provider and event names
# from `ringlog list --providers` / `--events`: what running programs
# declared, asked of the daemon at the socket given on the line (or
# $RINGLOG_SOCKET). Needs read access to the daemon for names; without
# it, names are simply not offered.

# The names ringlog list prints ($1: --providers or --events), one a line.
_ringlog_names()
{
    local prog=$1 what=$2 sock=$3
    if [[ -n $sock ]]; then
        "$prog" list "$what" --socket "$sock" 2>/dev/null
    else
        "$prog" list "$what" 2>/dev/null
    fi
}

_ringlog()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local prog=${COMP_WORDS[0]} cmd="" sock="" i w npos=0
    local cmds="tail status read export emit enable disable list vacuum snapshot"
    local levels="critical error warning info verbose crit err warn debug"
    local IFS=$' \t\n'

    COMPREPLY=()
    # The subcommand, the socket given, and how many plain arguments come
    # before the word being completed (for enable PROVIDER LEVEL KEYWORDS).
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ -z $cmd ]]; then
            [[ $w != -* ]] && cmd=$w
            continue
        fi
        case $w in
            --socket) sock=${COMP_WORDS[i+1]}; ((i++)) ;;
            --socket=*) sock=${w#--socket=} ;;
            --*=*|-?) ;;
            --provider|--event|--level|--keyword|--pid|--uid|--since|--until|--dir|--size|--time|\
            --output|--color|--grep|--lines|--field|--priority|--vacuum-size|--vacuum-time|-n|-o|-p|\
            --format)
                ((i++)) ;;
            -*) ;;
            *) ((npos++)) ;;
        esac
    done

    if [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
        return 0
    fi

    # export: --output is where the trace goes, not read's output mode
    if [[ $cmd == export ]]; then
        case $prev in
            --format|-F)
                COMPREPLY=($(compgen -W "ctf perfetto json" -- "$cur"))
                return 0 ;;
            --output|-O)
                compopt -o filenames 2>/dev/null
                COMPREPLY=($(compgen -f -- "$cur"))
                return 0 ;;
        esac
    fi

    case $prev in
        --provider)
            COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --providers "$sock")" -- "$cur"))
            return 0 ;;
        --event)
            COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --events "$sock")" -- "$cur"))
            return 0 ;;
        --level|-p|--priority)
            COMPREPLY=($(compgen -W "$levels" -- "$cur"))
            return 0 ;;
        -o|--output)
            COMPREPLY=($(compgen -W "short short-iso short-precise cat verbose json json-pretty" -- "$cur"))
            return 0 ;;
        --color)
            COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
            return 0 ;;
        --since|--until)
            COMPREPLY=($(compgen -W "today yesterday now -10m -1h" -- "$cur"))
            return 0 ;;
        --dir)
            COMPREPLY=($(compgen -d -- "$cur"))
            return 0 ;;
        --socket)
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0 ;;
        --size|--time|--keyword|--pid|--uid|--lines|-n|--grep|--watch|--vacuum-size|--vacuum-time|--reason)
            return 0 ;;
    esac

    if [[ $cur == -* ]]; then
        # Options as the command's own --help lists them.
        local opts
        opts=$("$prog" "$cmd" --help 2>/dev/null |
               grep -oE -- '(^|[][ ,|(])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[][ ,|(]//' | sort -u)
        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
        return 0
    fi

    case $cmd in
        enable)
            case $npos in
                0) COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --providers "$sock")" -- "$cur")) ;;
                1) COMPREPLY=($(compgen -W "$levels off" -- "$cur")) ;;
            esac ;;
        disable)
            ((npos == 0)) &&
                COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --providers "$sock")" -- "$cur")) ;;
        list)
            ((npos == 0)) &&
                COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --providers "$sock")" -- "$cur")) ;;
        emit)
            case $npos in
                0) COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --providers "$sock")" -- "$cur")) ;;
                1) COMPREPLY=($(compgen -W "$(_ringlog_names "$prog" --events "$sock")" -- "$cur")) ;;
            esac ;;
        read|export)
            # segment files, and directories on the way to them
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -X '!*.rlseg' -- "$cur") $(compgen -d -- "$cur")) ;;
    esac
    return 0
}
complete -F _ringlog ringlog
